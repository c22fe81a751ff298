"""Stream one partition of a topic from its beginning to the end it has now (no consumer group,
nothing committed): what `plylog export` reads, so that memory holds one batch, not a topic."""

from __future__ import annotations

from collections.abc import Iterator

from services.common.kafka_read import PartitionReader, Record

from ._errors import CliError

BATCH = 5000


class TopicReader:
    def __init__(self, bootstrap: str, timeout_s: float = 30.0):
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        try:
            self.reader = PartitionReader(bootstrap, request_timeout_s=timeout_s + 5)
        except Exception as error:  # noqa: BLE001 - NoBrokersAvailable and friends
            raise CliError(
                f"cannot reach Kafka at {bootstrap}: {type(error).__name__}: {error}",
                "start it with `plylog up`, or set KAFKA_BOOTSTRAP_SERVERS",
            ) from None

    def close(self) -> None:
        self.reader.close()

    def __enter__(self) -> TopicReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partitions(self, topic: str) -> int:
        found = self.reader.partitions(topic)
        if not found:
            raise CliError(
                f"topic {topic!r} does not exist on {self.bootstrap}",
                "check PLYLOG_TOPIC_PREFIX and KAFKA_BOOTSTRAP_SERVERS",
            )
        return found

    def records(self, topic: str, partition: int) -> Iterator[Record]:
        """Every record of the partition up to its end offset as of now, in offset order."""
        self.reader.start(topic, partition)
        end = self.reader.end(topic, partition)
        position = -1
        while position < end:
            records, position = self.reader.take(BATCH, self.timeout_s)
            if not records and position < end:
                raise CliError(
                    f"reading {topic}[{partition}]: no data for {self.timeout_s:.0f}s at offset {position} of {end}",
                    "is the broker healthy? (`plylog status`)",
                )
            yield from (record for record in records if record.offset < end)
