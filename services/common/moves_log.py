"""Read plylog's topics back from Kafka and refold move records exactly as the rules worker does
(shared by the CLI's replay and audit, the gateway's time travel, tests and benchmarks)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from kafka import KafkaConsumer, TopicPartition
from kafka.partitioner.default import murmur2

from games.fold import Placement, Replayer, Step

from . import kafka_auth
from .kafka_auth import KafkaAuth
from .settings import Settings, load


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def read_topic(
    bootstrap: str,
    topic: str,
    partitions: list[int] | None = None,
    timeout_s: float = 30.0,
    auth: KafkaAuth | None = None,
) -> list[Record]:
    """Every record now in `topic` (or in some of its partitions), in offset order per partition.
    `auth` None: this process's credentials (its environment)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        group_id=None,
        consumer_timeout_ms=int(timeout_s * 1000),
        fetch_max_bytes=32 * 1024 * 1024,
        **kafka_auth.kafka_python(auth or KafkaAuth.from_env()),
    )
    try:
        available = consumer.partitions_for_topic(topic)
        if available is None:
            raise LookupError(f"topic {topic!r} does not exist on {bootstrap}")
        if not available:  # kafka-python's answer for a topic its metadata does not list
            raise LookupError(
                f"topic {topic!r} has no partitions on {bootstrap}: it does not exist, "
                "or the broker's metadata does not list it yet"
            )
        assigned = [TopicPartition(topic, p) for p in sorted(available) if partitions is None or p in partitions]
        if not assigned:  # kafka-python would raise a bare "No partitions are currently assigned"
            raise LookupError(
                f"topic {topic!r} on {bootstrap} has none of the partitions {partitions} (it has {sorted(available)})"
            )
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        ends = consumer.end_offsets(assigned)
        remaining = {tp for tp in assigned if ends[tp] > 0}
        records: list[Record] = []
        while remaining:
            batch = consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=5000)
            if not batch:
                raise TimeoutError(
                    f"reading {topic}: no data for {timeout_s}s with {len(remaining)} partitions unfinished"
                )
            for tp, messages in batch.items():
                records.extend(Record(tp.partition, m.offset, m.key, m.value) for m in messages)
                if messages and messages[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)
        records.sort(key=lambda r: (r.partition, r.offset))
        return records
    finally:
        consumer.close()


#: Keys longer than this are not cached: a match id is at most 64 characters, while anyone may
#: write keys of up to a record's size, and 16,384 of those would be held by the cache.
CACHED_KEY_BYTES = 256


def partition_of(key: bytes, partitions: int) -> int:
    """Kafka's default partition for a key (murmur2, as the Java and Python clients compute it):
    a match's home partition. Cached: kafka-python's murmur2 is pure Python, and the same match
    keys come again with every move (docs/decisions/home-partition.md)."""
    if len(key) > CACHED_KEY_BYTES:
        return _partition(key, partitions)
    return _cached_partition(key, partitions)


def _partition(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


_cached_partition = lru_cache(maxsize=16_384)(_partition)


def placement(topic: str, partition: int, key: bytes | None, partitions: int) -> Placement:
    """Where a record of `topic` was read and where its key belongs (see games.fold.read)."""
    return Placement(topic, partition, partition_of(key or b"", partitions))


def partition_count(bootstrap: str, topic: str, auth: KafkaAuth | None = None) -> int:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, **kafka_auth.kafka_python(auth or KafkaAuth.from_env())
    )
    try:
        partitions = consumer.partitions_for_topic(topic)
    finally:
        consumer.close()
    if not partitions:
        raise LookupError(f"topic {topic!r} does not exist on {bootstrap}")
    return len(partitions)


def refold(
    records: list[Record],
    *,
    topic: str,
    partitions: int,
    match_id: str | None = None,
    replayers: dict[int, Replayer] | None = None,
) -> Iterator[tuple[Record, Step]]:
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
