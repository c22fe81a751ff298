"""A compacted topic as a table in memory: every partition read from its beginning, then followed;
a record sets its key, a tombstone (no value) removes it. The gateway keeps players' profiles and
keys this way (services/common/profiles.py), so an erasure written by any gateway or by the CLI
reaches every gateway's table. Part of the Kafka layer (docs/decisions/kafka-layer.md).

A value this process wrote itself (`expect`) is seen at once, before the table reads it back, and
a tombstone it wrote hides the key at once: what a request wrote, the next request reads.
"""

from __future__ import annotations

import logging
import threading

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from .kafka_auth import KafkaAuth
from .kafka_fetch import ReaderThread, end_offset, readable_partitions, take_fetched, unjoined_consumer

log = logging.getLogger("plylog.kafka.table")
POLL_S = 0.2


class KafkaTable(ReaderThread):
    def __init__(self, bootstrap: str, topic: str, auth: KafkaAuth | None = None, name: str = "plylog-table"):
        super().__init__(name, log)
        self._bootstrap, self._topic, self._auth = bootstrap, topic, auth
        self._rows: dict[bytes, bytes] = {}
        self._expected: dict[bytes, bytes | None] = {}  # written here, not read back yet
        self._lock = threading.Lock()
        self.ready = threading.Event()  # set once what the topic held at the start has been read

    def get(self, key: str) -> bytes | None:
        k = key.encode()
        with self._lock:
            if k in self._expected:
                return self._expected[k]
            return self._rows.get(k)

    def expect(self, key: str, value: bytes | None) -> None:
        """`value` was just written for `key` here (None: a tombstone): read it so from now on."""
        with self._lock:
            self._expected[key.encode()] = value

    def _apply(self, key: bytes, value: bytes | None) -> None:
        with self._lock:
            if value is None:
                self._rows.pop(key, None)
            else:
                self._rows[key] = value
            if key in self._expected and self._expected[key] == value:
                del self._expected[key]  # read back: the table has caught up with this write

    def _consumer(self) -> Consumer:
        return unjoined_consumer(self._bootstrap, self._name, self._auth, "plylog.kafka.table.librdkafka")

    def _read(self, consumer: Consumer) -> None:
        partitions = readable_partitions(consumer, self._topic)
        ends = {p: end_offset(consumer, self._topic, p) for p in partitions}
        behind = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(self._topic, p, OFFSET_BEGINNING) for p in partitions])
        while not self._stop.is_set():
            fetched = take_fetched(consumer, 1000, POLL_S)
            if not behind or not fetched:  # nothing left to fetch: the end may be a compacted-away gap
                self.ready.set()
            for message in fetched:
                if message.error() is not None or message.key() is None:
                    continue
                self._apply(message.key(), message.value())
                if message.partition() in behind and message.offset() + 1 >= ends[message.partition()]:
                    behind.discard(message.partition())
