"""Refold move records read back from Kafka (services.common.kafka_read) exactly as the rules worker
does (shared by the CLI's replay and audit, the gateway's time travel, tests and benchmarks)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from games.fold import Placement, Replayer, Step

from .kafka_partition import partition_of
from .kafka_read import Record, partition_count, read_topic
from .settings import Settings, load


def placement(topic: str, partition: int, key: bytes | None, partitions: int) -> Placement:
    """Where a record of `topic` was read and where its key belongs (see games.fold.read)."""
    return Placement(topic, partition, partition_of(key or b"", partitions))


def refold(
    records: list[Record],
    *,
    topic: str,
    partitions: int,
    match_id: str | None = None,
    replayers: dict[int, Replayer] | None = None,
) -> Iterator[tuple[Record, Step | None]]:
    """Fold move records of `topic` (with `partitions` partitions) exactly as the rules worker
    does, one Replayer per partition (pass `replayers` to continue folds of an earlier call)."""
    replayers = defaultdict(Replayer, replayers or {})
    for rec in records:
        if match_id is not None and rec.key != match_id.encode():
            continue
        if rec.value is None:
            yield rec, None  # a tombstone: the worker dead-letters it
            continue
        taken = replayers[rec.partition].feed(
            rec.value,
            {"partition": rec.partition, "offset": rec.offset},
            key=rec.key or b"",
            placement=placement(topic, rec.partition, rec.key, partitions),
        )
        yield rec, taken


def fold_match_from_topic(match_id: str, settings: Settings | None = None) -> Iterator[Step]:
    """The steps of one match, refolded from its partition of the moves topic."""
    settings = settings or load()
    topic = settings.topics.moves
    partitions = partition_count(settings.kafka_bootstrap, topic)
    records = read_topic(settings.kafka_bootstrap, topic, [partition_of(match_id.encode(), partitions)])
    for _, taken in refold(records, topic=topic, partitions=partitions, match_id=match_id):
        if taken is not None:
            yield taken
