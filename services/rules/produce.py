"""Producing a batch's records, so that a record Kafka refuses *because of the record* (too large
for the topic) never stops the worker, while Kafka refusing for any other reason still does.

Every record goes out at once and is awaited together (the fast path). When some fail with a
refusal of the record (`Producer.refused`), each of them is sent again alone (a rejected batch may
have held records that fit); one that is refused alone is replaced: a dead letter by a minimal one
(no raw bytes, their size and SHA-256 kept), a result or outcome by a dead letter that names it and
why. Only if that replacement is refused too, or the error is of another kind (the broker
unavailable, not enough replicas), the error is raised and the batch fails: the worker stops and a
restart answers the batch again from its stored positions.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from .core import Incoming, Outgoing, dead_letter
from .ports import Producer

log = logging.getLogger("plylog.rules")


async def produce_all(producer: Producer, sends: list[Outgoing]) -> int:
    """Produce `sends` and wait for every acknowledgement; returns how many were replaced."""
    return await acknowledged(producer, sends, await start(producer, sends))


async def start(producer: Producer, sends: list[Outgoing]) -> list[asyncio.Future[Any]]:
    """Hand every record to the producer; their delivery futures, in order."""
    return [await _sent(producer, out) for out in sends]


async def acknowledged(producer: Producer, sends: list[Outgoing], futures: list[asyncio.Future[Any]]) -> int:
    """Wait for the deliveries `start` began; returns how many records were replaced."""
    # Shielded: when the worker stops while a batch is in flight, cancelling this wait must not
    # cancel the producer's own futures (Faust sets their results later: InvalidStateError).
    outcomes = await asyncio.shield(asyncio.gather(*futures, return_exceptions=True))
    failed = [(out, error) for out, error in zip(sends, outcomes, strict=False) if isinstance(error, BaseException)]
    for _, error in failed:
        if not producer.refused(error):
            raise error
    replaced = 0
    for out, _ in failed:
        replaced += await _alone_or_replaced(producer, out)
    return replaced


async def _sent(producer: Producer, out: Outgoing) -> asyncio.Future[Any]:
    """The delivery future of `out`; a client-side refusal (over the producer's request size)
    becomes a failed future, so it is handled like the broker's."""
    try:
        return await producer.send(out)
    except Exception as error:
        if not producer.refused(error):
            raise
        future = asyncio.get_running_loop().create_future()
        future.set_exception(error)
        return future


async def _alone_or_replaced(producer: Producer, out: Outgoing) -> int:
    try:
        await (await producer.send(out))
        return 0
    except Exception as error:
        if not producer.refused(error):
            raise
        substitute = replacement(out, error)
        log.warning(
            "Kafka refused a %s record of %d bytes answering %s (%s: %s); sending a %d-byte dead letter instead",
            out.kind,
            len(out.value),
            _where(out.cause),
            type(error).__name__,
            error,
            len(substitute.value),
        )
    try:
        await (await producer.send(substitute))
    except Exception as error:
        if not producer.refused(error):
            raise
        raise RuntimeError(
            f"Kafka refused even a {len(substitute.value)}-byte dead letter for {_where(out.cause)} "
            f"({type(error).__name__}); is max.message.bytes of the dead-letter topic that small?"
        ) from error
    return 1


def replacement(out: Outgoing, error: BaseException) -> Outgoing:
    """A dead letter small enough for any topic, in place of a record Kafka refused."""
    cause = out.cause or Incoming(out.key, b"", out.partition, -1, "?")
    digest = hashlib.sha256(out.value).hexdigest()
    if out.kind == "deadletter":
        why = f"its dead letter of {len(out.value)} bytes was refused by Kafka ({type(error).__name__})"
        return dead_letter(cause, f"{why}; raw bytes left out", keep_raw=0)
    why = (
        f"its {out.kind[:-1]} record ({len(out.value)} bytes, sha256 {digest}) was refused by Kafka "
        f"({type(error).__name__}: {error}); the move was applied"
    )
    return dead_letter(cause, why, keep_raw=0)


def _where(cause: Incoming | None) -> str:
    return "?" if cause is None else f"{cause.topic}[{cause.partition}]@{cause.offset}"
