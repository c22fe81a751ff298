"""The projector's Kafka side: a librdkafka consumer (confluent-kafka) behind the few calls the
loops make (subscribe or assign, poll a batch, seek, pause, end offsets).

Why librdkafka and not kafka-python: the projector spent ~20 % of its CPU in kafka-python's
fetcher and record parsing (pure Python) and its network thread; librdkafka parses in C. And it
fetches every assigned partition whatever it holds already, where kafka-python and aiokafka leave
a partition with buffered records out of the fetch in flight (which made a partition wait out a
whole long-poll). Offsets are never committed to Kafka: the truth is in Redis (runner.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import NamedTuple

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth
from services.common.kafka_fetch import take_fetched

log = logging.getLogger("plylog.projector")


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class Fetched(NamedTuple):
    """One record as the loops use it."""

    offset: int
    value: bytes | None


Positions = dict[TopicPartition, int | None]  # next offset to read; None: from the beginning
# A 50 ms long-poll (librdkafka's default is 500 ms): the broker answers a fetch at once when it
# has records, so this only bounds how late a record that arrives during a poll is seen.
FETCH_MAX_WAIT_MS = 50


def config(
    bootstrap: str, group: str | None = None, instance: str | None = None, auth: KafkaAuth | None = None
) -> dict:
    """The consumer's librdkafka configuration; `auth` None: this process's credentials (environment)."""
    settings = {
        "bootstrap.servers": bootstrap,
        **kafka_auth.librdkafka(auth or KafkaAuth.from_env()),
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": FETCH_MAX_WAIT_MS,
        "fetch.max.bytes": 64 * 1024 * 1024,
        "max.partition.fetch.bytes": 16 * 1024 * 1024,
        "client.id": instance or "plylog-projector",
        "logger": logging.getLogger("plylog.projector.kafka"),
        "error_cb": _log_error,
    }
    # librdkafka insists on a group id even for manual assignment (nothing is committed to it)
    settings["group.id"] = group or "plylog-projector-unsubscribed"
    if group and instance:  # static membership: a restart within the session timeout keeps the partitions
        settings.update(
            {"group.instance.id": f"{group}.{instance}", "session.timeout.ms": 10_000, "heartbeat.interval.ms": 2_000}
        )
    return settings


def _log_error(error: KafkaError) -> None:
    # a broker away is retried by librdkafka itself; say so once per error, not per record
    log.warning("Kafka: %s", error)


class Consumer:
    """One librdkafka consumer; every call is made from the loop's thread (callbacks run in poll)."""

    def __init__(self, settings: dict):
        self._consumer = confluent_kafka.Consumer(settings)

    def subscribe(
        self,
        topics: list[str],
        on_assigned: Callable[[list[TopicPartition]], Positions],
        on_revoked: Callable[[list[TopicPartition]], None],
    ) -> None:
        """Join the group; `on_assigned` returns where each assigned partition starts."""

        def assigned(consumer, partitions) -> None:
            owned = on_assigned([TopicPartition(p.topic, p.partition) for p in partitions])
            consumer.assign([_native(tp, owned.get(tp)) for tp in owned])

        def revoked(consumer, partitions) -> None:
            on_revoked([TopicPartition(p.topic, p.partition) for p in partitions])

        self._consumer.subscribe(topics, on_assign=assigned, on_revoke=revoked, on_lost=revoked)

    def assign(self, positions: Positions) -> None:
        self._consumer.assign([_native(tp, offset) for tp, offset in positions.items()])

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(p.topic, p.partition) for p in self._consumer.assignment()]

    def seek(self, positions: Positions) -> None:
        for tp, offset in positions.items():
            self._consumer.seek(_native(tp, offset))

    def poll(self, max_records: int, timeout_s: float) -> dict[TopicPartition, list[Fetched]]:
        """Up to `max_records` records, per partition in offset order: waits up to `timeout_s` for a
        first one, then takes what is already fetched (never waits for a batch to fill)."""
        polled: dict[TopicPartition, list[Fetched]] = {}
        for message in take_fetched(self._consumer, max_records, timeout_s):
            error = message.error()
            if error is not None:
                _log_error(error)
                continue
            tp = TopicPartition(message.topic(), message.partition())
            records = polled.get(tp)
            if records is None:
                records = polled[tp] = []
            records.append(Fetched(message.offset(), message.value()))
        return polled

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._consumer.pause([_native(tp) for tp in partitions])

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._consumer.resume([_native(tp) for tp in partitions])

    def position(self, tp: TopicPartition) -> int | None:
        """The next offset to read, None before the first record read."""
        offset = self._consumer.position([_native(tp)])[0].offset
        return offset if offset >= 0 else None

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_s: float = 10.0, cached: bool = False
    ) -> dict[TopicPartition, int]:
        """The end offset of each partition: asked of the broker, or (`cached`) as the last fetch
        response of an assigned partition said (no round trip; KeyError when none came yet)."""
        ends = {}
        for tp in partitions:
            end = self._consumer.get_watermark_offsets(_native(tp), timeout=timeout_s, cached=cached)
            if end is None or end[1] < 0:
                raise KeyError(f"no end offset of {tp.topic}[{tp.partition}] known yet")
            ends[tp] = end[1]
        return ends

    def partitions_for(self, topic: str, timeout_s: float = 10.0) -> list[int]:
        """The topic's partitions; LookupError when it does not exist."""
        metadata = self._consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            raise LookupError(f"topic {topic!r} does not exist ({metadata.error if metadata else 'no metadata'})")
        return sorted(metadata.partitions)

    def close(self) -> None:
        try:
            self._consumer.close()
        except (KafkaException, RuntimeError) as error:  # closing twice, or a broker away: nothing to keep
            log.debug("closing the consumer: %s", error)


def _native(tp: TopicPartition, offset: int | None = None) -> confluent_kafka.TopicPartition:
    if offset is None:
        return confluent_kafka.TopicPartition(tp.topic, tp.partition, confluent_kafka.OFFSET_BEGINNING)
    return confluent_kafka.TopicPartition(tp.topic, tp.partition, offset)
