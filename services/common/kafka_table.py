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

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from .kafka_auth import KafkaAuth
from .kafka_fetch import readable_partitions, take_fetched, unjoined_consumer

log = logging.getLogger("plylog.kafka.table")
POLL_S = 0.2
RETRY_S = 2.0


class KafkaTable:
    def __init__(self, bootstrap: str, topic: str, auth: KafkaAuth | None = None, name: str = "plylog-table"):
        self._bootstrap, self._topic, self._auth, self._name = bootstrap, topic, auth, name
        self._rows: dict[bytes, bytes] = {}
        self._expected: dict[bytes, bytes | None] = {}  # written here, not read back yet
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()  # set once what the topic held at the start has been read

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Blocking (call it in a thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

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

    def _run(self) -> None:
        while not self._stop.is_set():
            consumer = None
            try:
                consumer = self._consumer()
                self._read(consumer)
            except (KafkaException, RuntimeError) as error:
                log.warning("%s: %s; retrying in %.0f s", self._name, error, RETRY_S)
                self._stop.wait(RETRY_S)
            finally:
                if consumer is not None:
                    consumer.close()

    def _consumer(self) -> Consumer:
        return unjoined_consumer(self._bootstrap, self._name, self._auth, "plylog.kafka.table.librdkafka")

    def _read(self, consumer: Consumer) -> None:
        partitions = readable_partitions(consumer, self._topic)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(self._topic, p), timeout=5)[1] for p in partitions}
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
