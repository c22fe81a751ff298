"""Stream one partition of a topic from its beginning to the end it has now (no consumer group,
nothing committed): what `plylog export` reads, so that memory holds one batch, not a topic."""

from __future__ import annotations

from collections.abc import Iterator

from kafka import KafkaConsumer, TopicPartition

from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth
from services.common.moves_log import Record

from ._errors import CliError


class TopicReader:
    def __init__(self, bootstrap: str, timeout_s: float = 30.0):
        self.bootstrap = bootstrap
        self.timeout_ms = int(timeout_s * 1000)
        try:
            self.consumer = KafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=None,
                enable_auto_commit=False,
                fetch_max_bytes=32 * 1024 * 1024,
                request_timeout_ms=self.timeout_ms + 5000,
                **kafka_auth.kafka_python(KafkaAuth.from_env()),
            )
        except Exception as error:  # noqa: BLE001 - NoBrokersAvailable and friends
            raise CliError(
                f"cannot reach Kafka at {bootstrap}: {type(error).__name__}: {error}",
                "start it with `plylog up`, or set KAFKA_BOOTSTRAP_SERVERS",
            ) from None

    def close(self) -> None:
        self.consumer.close()

    def __enter__(self) -> TopicReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def partitions(self, topic: str) -> int:
        found = self.consumer.partitions_for_topic(topic)
        if not found:
            raise CliError(
                f"topic {topic!r} does not exist on {self.bootstrap}",
                "check PLYLOG_TOPIC_PREFIX and KAFKA_BOOTSTRAP_SERVERS",
            )
        return len(found)

    def records(self, topic: str, partition: int) -> Iterator[Record]:
        """Every record of the partition up to its end offset as of now, in offset order."""
        tp = TopicPartition(topic, partition)
        self.consumer.assign([tp])
        self.consumer.seek_to_beginning(tp)
        end = self.consumer.end_offsets([tp])[tp]
        while self.consumer.position(tp) < end:
            batch = self.consumer.poll(timeout_ms=self.timeout_ms, max_records=5000)
            if not batch:
                raise CliError(
                    f"reading {topic}[{partition}]: no data for {self.timeout_ms / 1000:.0f}s at offset "
                    f"{self.consumer.position(tp)} of {end}",
                    "is the broker healthy? (`plylog status`)",
                )
            for message in batch.get(tp, []):
                if message.offset < end:
                    yield Record(partition, message.offset, message.key, message.value)
