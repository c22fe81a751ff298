"""Reading a range of a topic back, with no consumer group and nothing committed: a whole topic
(`read_topic`: the CLI's audit, tests), or a partition from an offset to an end, a batch at a time
(`PartitionReader`: the gateway's history, `plylog export`). Blocking (kafka-python): call it in a
thread from an event loop. Part of the Kafka layer (docs/decisions/kafka-layer.md)."""

from __future__ import annotations

from dataclasses import dataclass

from kafka import KafkaConsumer, TopicPartition

from . import kafka_auth
from .kafka_auth import KafkaAuth

FETCH_MAX_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _consumer(bootstrap: str, auth: KafkaAuth | None, **options: int) -> KafkaConsumer:
    """`auth` None: this process's credentials (its environment)."""
    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_bytes=FETCH_MAX_BYTES,
        **options,
        **kafka_auth.kafka_python(auth or KafkaAuth.from_env()),
    )


def read_topic(
    bootstrap: str,
    topic: str,
    partitions: list[int] | None = None,
    timeout_s: float = 30.0,
    auth: KafkaAuth | None = None,
) -> list[Record]:
    """Every record now in `topic` (or in some of its partitions), in offset order per partition."""
    consumer = _consumer(bootstrap, auth, consumer_timeout_ms=int(timeout_s * 1000))
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


def partition_count(bootstrap: str, topic: str, auth: KafkaAuth | None = None) -> int:
    with PartitionReader(bootstrap, auth) as reader:
        count = reader.partitions(topic)
    if not count:
        raise LookupError(f"topic {topic!r} does not exist on {bootstrap}")
    return count


class PartitionReader:
    """One partition at a time, from an offset (or its beginning) on, a batch per `take`. Its position
    moves past what it returns, and past offsets that hold no record (a transaction's markers)."""

    def __init__(self, bootstrap: str, auth: KafkaAuth | None = None, request_timeout_s: float = 15.0):
        self._consumer = _consumer(bootstrap, auth, request_timeout_ms=int(request_timeout_s * 1000))
        self._reading: TopicPartition | None = None

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> PartitionReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partitions(self, topic: str) -> int | None:
        """The topic's partition count (None or 0: the topic is missing, or not in the metadata yet)."""
        found = self._consumer.partitions_for_topic(topic)
        return len(found) if found is not None else None

    def end(self, topic: str, partition: int) -> int:
        """The partition's end: the offset its next record will have."""
        tp = TopicPartition(topic, partition)
        end: int = self._consumer.end_offsets([tp])[tp]
        return end

    def offset_at(self, topic: str, partition: int, at_ms: int) -> int:
        """The first offset whose broker time is `at_ms` or later (0 when none is)."""
        tp = TopicPartition(topic, partition)
        found = self._consumer.offsets_for_times({tp: at_ms})
        return found[tp].offset if found.get(tp) is not None else 0

    def start(self, topic: str, partition: int, offset: int | None = None) -> None:
        """Read `partition` of `topic` from now on, from `offset` (None: its beginning)."""
        tp = TopicPartition(topic, partition)
        self._consumer.assign([tp])
        if offset is None:
            self._consumer.seek_to_beginning(tp)
        else:
            self._consumer.seek(tp, offset)
        self._reading = tp

    def take(self, most: int, timeout_s: float) -> tuple[list[Record], int]:
        """(up to `most` records, waited for up to `timeout_s`; the position after them)."""
        tp = self._reading
        if tp is None:
            raise RuntimeError("start() names the partition to read first")
        batch = self._consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=most)
        records = [Record(tp.partition, m.offset, m.key, m.value) for m in batch.get(tp, ())]
        position: int = self._consumer.position(tp)
        return records, position
