"""Tailing a topic: every partition read from its end as it was when the tail started (no consumer
group, nothing committed), each fetch's records handed to the event loop that started the tail.
Partitions added to the topic later are read too; a topic that cannot be read yet is retried.
The gateway's seat sockets take their early results this way (gateway/resources.py).

One librdkafka (confluent-kafka) consumer in a thread: a tail reads every record of its topic, and
librdkafka parses them in C (docs/decisions/kafka-layer.md). Part of the Kafka layer.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, TopicPartition

from .kafka_auth import KafkaAuth
from .kafka_fetch import ReaderThread, end_offset, readable_partitions, take_fetched, unjoined_consumer

log = logging.getLogger("plylog.kafka.tail")
BATCH = 1000  # records taken from librdkafka's queue at once
POLL_S = 0.2  # how long one take waits for a record (also how soon stop() is seen)
REFRESH_S = 30.0  # partitions added to the topic are read from then on
Deliver = Callable[[list[tuple[bytes, bytes]]], None]


class TopicTail(ReaderThread):
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        deliver: Deliver,
        on_records: Callable[[int], None] = lambda n: None,
        auth: KafkaAuth | None = None,
        name: str = "plylog-tail",
    ):
        """`deliver(records)` is called on the event loop that calls `start`, with (key, value) pairs;
        `on_records(count)` in the tail's thread; `name`: its client id in the broker's logs."""
        super().__init__(name, log)
        self._bootstrap, self._topic, self._deliver, self._on_records = bootstrap, topic, deliver, on_records
        self._auth = auth
        self._loop: asyncio.AbstractEventLoop | None = None
        self.reading = threading.Event()  # set once partitions are assigned

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        super().start()

    def _failed(self) -> None:
        self.reading.clear()

    def _consumer(self) -> Consumer:
        return unjoined_consumer(
            self._bootstrap, self._name, self._auth, "plylog.kafka.tail.librdkafka", error_cb=_log_error
        )

    def _assign(self, consumer: Consumer, assigned: set[int]) -> set[int]:
        """Read every partition of the topic; new ones from their end. The partitions read now."""
        partitions = set(readable_partitions(consumer, self._topic))
        if partitions - assigned:
            # at each end as it is now (not OFFSET_END, resolved later): whatever is produced
            # once `reading` is set is read
            ends = [
                TopicPartition(self._topic, p, end_offset(consumer, self._topic, p))
                for p in sorted(partitions - assigned)
            ]
            consumer.incremental_assign(ends)
            log.info("%s: reading %s (%d partitions) from its end", self._name, self._topic, len(partitions))
        self.reading.set()
        return assigned | partitions

    def _read(self, consumer: Consumer) -> None:
        loop = self._loop
        assert loop is not None, "start() has run"
        assigned = self._assign(consumer, set())
        refresh = time.monotonic() + REFRESH_S
        while not self._stop.is_set():
            records = [
                (m.key(), m.value())
                for m in take_fetched(consumer, BATCH, POLL_S)
                if m.error() is None and m.key() is not None and m.value() is not None
            ]
            if records:
                self._on_records(len(records))
                loop.call_soon_threadsafe(self._deliver, records)
            if time.monotonic() > refresh:
                assigned, refresh = self._assign(consumer, assigned), time.monotonic() + REFRESH_S


def _log_error(error: KafkaError) -> None:
    # librdkafka retries a broker that is away by itself; this says so as it happens
    log.warning("tail: Kafka: %s", error)
