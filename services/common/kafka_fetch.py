"""Taking records from a librdkafka (confluent-kafka) consumer without waiting for a batch to fill.

`Consumer.consume(n, timeout)` returns only once it has `n` records or the timeout has passed, so a
lone record waited the whole timeout (the gateway's feed did, at first). `poll` returns the first
record as it comes; what librdkafka has fetched besides is then taken without waiting.
"""

from __future__ import annotations

from typing import Any


def take_fetched(consumer: Any, most: int, timeout_s: float) -> list:
    """Up to `most` messages (errors included, as librdkafka hands them over): waits up to
    `timeout_s` for a first one, then takes what is already fetched."""
    first = consumer.poll(timeout_s)
    if first is None:
        return []
    return [first, *consumer.consume(most - 1, 0)] if most > 1 else [first]
