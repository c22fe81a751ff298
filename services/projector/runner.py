"""The projector's loops: consume results and outcomes, plan each batch, apply it with its offsets.

`Projection` is what both loops share: this worker's idea of the stored offsets of the
partitions it owns, and `apply(records)` -> one atomic script per batch. The offsets in Redis
are the truth: after every partition assignment, and whenever a batch finds them moved
(another worker, a wipe), the worker reads them again and seeks there; Kafka's committed
offsets are never used.

- `run_group`: the service. A kafka-python consumer in the group `<topic prefix><consumer>`
  (static membership per instance name), auto commit off; several instances share the
  partitions (outcomes has one partition, so exactly one instance folds ratings).
- `catch_up`: `plylog rebuild`. Manual assignment of every partition, from the stored offsets
  (none after a wipe) to the end offsets seen at the start, then it returns.
"""
from __future__ import annotations

import logging
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Optional

import orjson
import redis
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener

from services.common.settings import Topics

from .plan import Consumed, decode, needs, plan
from .store import Conflict, Store, offset_field

if TYPE_CHECKING:
    from .ops import ProjectorOps

log = logging.getLogger("plylog.projector")

DEFAULT_BATCH = 2000


def _tp_of(field: str) -> TopicPartition:
    topic, _, partition = field.rpartition(":")
    return TopicPartition(topic, int(partition))


class ProjectionMoved(RuntimeError):
    """Another writer changed the stored offsets while `catch_up` ran."""


@dataclass
class Totals:
    records: int = 0
    batches: int = 0
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)

    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        return {"records": self.records, "batches": self.batches, "batch_seconds_total": round(self.seconds, 6),
                **{name: self.counts[name] for name in sorted(self.counts)}}


class Projection:
    """Applies batches for the partitions this worker owns, fenced by the stored offsets."""

    def __init__(self, store: Store, topics: Topics, publish: bool = True):
        self.store = store
        self.topics = topics
        self.publish = publish
        self.positions: dict[TopicPartition, Optional[int]] = {}  # next offset as stored (None: none stored)
        self.totals = Totals()
        #: called with every applied poll's counts and duration (the Prometheus metrics, ops.py)
        self.listeners: list[Callable[[Counter, float], None]] = []

    def own(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, Optional[int]]:
        """Take partitions over at their stored offsets; returns them (the caller seeks)."""
        partitions = list(partitions)
        stored = self.store.stored_offsets([offset_field(tp.topic, tp.partition) for tp in partitions])
        for tp in partitions:
            self.positions[tp] = stored[offset_field(tp.topic, tp.partition)]
        return {tp: self.positions[tp] for tp in partitions}

    def disown(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.positions.pop(tp, None)

    def apply(self, polled: dict[TopicPartition, list]) -> Optional[Conflict]:
        """Apply one poll's records (per partition in offset order), one script per partition. None
        when done, or the Conflict when a partition's stored offset was not ours (nothing of that
        partition written; the partitions before it stay applied: re-own and seek)."""
        started = time.perf_counter()
        counts, commands, applied = Counter(), 0, 0
        for tp, messages in sorted(polled.items()):  # one script per partition: one hash slot each
            if tp not in self.positions:
                continue  # revoked since it was fetched
            expected = self.positions[tp]
            fresh = [m for m in messages if expected is None or m.offset >= expected]
            if fresh and expected is not None and fresh[0].offset > expected:
                log.warning("%s[%d]: next record at offset %d, expected %d (records missing from the topic?)",
                            tp.topic, tp.partition, fresh[0].offset, expected)
            if not fresh:
                continue
            records = [Consumed(tp.topic, tp.partition, m.offset, m.value) for m in fresh]
            planned, ran, conflict = self._apply_records(records)
            if conflict is not None:
                return conflict  # what was applied before stays applied, with its offsets
            counts, commands, applied = counts + planned, commands + ran, applied + len(records)
        if applied:
            self._count(applied, counts, commands, time.perf_counter() - started)
        return None

    def _apply_records(self, records: list[Consumed]) -> tuple[Counter, int, Optional[Conflict]]:
        """Plan and apply `records` with their offsets: (counts, commands run, conflict or None).
        If Redis refuses the script's data (it validates nothing of ours; planning should have
        caught it), the records are applied in halves, down to the one that fails, which is
        skipped (its offset is stored, nothing else) and counted: one bad record never wedges."""
        items = decode(records, self.topics.outcomes)
        batch = plan(items, self.store.read_known(needs(items)), self.store.keys, self.publish)
        advances = self._advances(records)
        try:
            conflict = self.store.apply(batch.commands, advances)
        except (redis.DataError, redis.ResponseError) as error:
            if len(records) > 1:
                middle = len(records) // 2
                first = self._apply_records(records[:middle])
                if first[2] is not None:
                    return first
                second = self._apply_records(records[middle:])
                return first[0] + second[0], first[1] + second[1], second[2]
            c = records[0]
            log.warning("skipping %s[%d]@%d: Redis refused what it gives (%s: %s)", c.topic, c.partition, c.offset,
                        type(error).__name__, error)
            batch.counts = Counter({"skipped": 1})
            conflict = self.store.apply([], advances)
        if conflict is None:
            for name, (_, new) in advances.items():
                self.positions[_tp_of(name)] = new
        return batch.counts, len(batch.commands), conflict

    def _advances(self, records: list[Consumed]) -> dict[str, tuple[Optional[int], int]]:
        """field -> (stored next offset expected, next offset after `records`), per partition."""
        advances: dict[str, tuple[Optional[int], int]] = {}
        for c in records:
            name = offset_field(c.topic, c.partition)
            expected = advances[name][0] if name in advances else self.positions[TopicPartition(c.topic, c.partition)]
            advances[name] = (expected, c.offset + 1)
        return advances

    def _count(self, records: int, counts: Counter, commands: int, took: float) -> None:
        t = self.totals
        t.records += records
        t.batches += 1
        t.seconds += took
        t.counts.update(counts)
        for listener in self.listeners:
            listener(counts, took)
        log.info("batch %d: %d results (%d applied, %d stale, %d duplicates, %d rejected), %d outcomes "
                 "(%d rated, %d unrated, %d repeated), %d unreadable, %d skipped -> %d commands in %.1f ms",
                 t.batches, counts["result"], counts["applied"], counts["stale"], counts["duplicates"],
                 counts["rejected"], counts["outcome"], counts["rated"], counts["unrated"],
                 counts["outcomes_repeated"], counts["unreadable"], counts["skipped"], commands, took * 1000)


def _seek(consumer: KafkaConsumer, positions: dict[TopicPartition, Optional[int]]) -> None:
    beginning = [tp for tp, offset in positions.items() if offset is None]
    if beginning:
        consumer.seek_to_beginning(*beginning)
    for tp, offset in positions.items():
        if offset is not None:
            consumer.seek(tp, offset)


def _describe(positions: dict[TopicPartition, Optional[int]]) -> str:
    return ", ".join(f"{tp.topic}[{tp.partition}]@{'start' if o is None else o}"
                     for tp, o in sorted(positions.items())) or "none"


class _SeekToStoredOffsets(ConsumerRebalanceListener):
    def __init__(self, projection: Projection, consumer: KafkaConsumer, on_assigned: Callable[[], None],
                 ops: Optional["ProjectorOps"] = None):
        self.projection, self.consumer, self.on_assigned, self.ops = projection, consumer, on_assigned, ops

    def on_partitions_revoked(self, revoked):
        self.projection.disown(revoked)
        if self.ops is not None:
            self.ops.revoked()

    def on_partitions_assigned(self, assigned):
        positions = self.projection.own(assigned)
        _seek(self.consumer, positions)
        log.info("assigned partitions: %s", _describe(positions))
        if self.ops is not None:
            self.ops.assigned(assigned)
        if assigned:  # kafka-python may first report an empty assignment, before the metadata
            self.on_assigned()


def consumer_config(bootstrap: str, batch: int) -> dict:
    # A 50 ms long-poll (kafka-python's default is 500 ms): a fetch in flight covers only the
    # partitions whose records are all consumed, so a long wait there delays the others' results.
    return dict(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                max_poll_records=batch, fetch_max_bytes=64 * 1024 * 1024,
                max_partition_fetch_bytes=16 * 1024 * 1024, fetch_max_wait_ms=50)


METRICS_EVERY_S = 5.0


def run_group(projection: Projection, bootstrap: str, group: str, instance: str,
              batch: int = DEFAULT_BATCH, ready_file: Optional[Path] = None,
              metrics_file: Optional[Path] = None, ops: Optional["ProjectorOps"] = None) -> None:
    """Consume as a member of `group` until SIGTERM/SIGINT; write the running totals (records,
    applied, unreadable and skipped ones, ...) to `metrics_file` every few seconds; feed the ops
    server's metrics and readiness (`ops`) when there is one."""
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))
    consumer = KafkaConsumer(**consumer_config(bootstrap, batch), group_id=group, client_id=instance,
                             group_instance_id=f"{group}.{instance}", session_timeout_ms=10_000,
                             heartbeat_interval_ms=2_000)

    def mark_ready() -> None:
        if ready_file is not None and not ready_file.exists():
            ready_file.write_text("ready\n")

    topics = projection.topics
    consumer.subscribe([topics.results, topics.outcomes],
                       listener=_SeekToStoredOffsets(projection, consumer, mark_ready, ops))
    if ops is not None:
        projection.listeners.append(ops.on_batch)
    log.info("consuming %s and %s as %s in group %s", topics.results, topics.outcomes, instance, group)
    written = 0.0
    try:
        while not stopping:
            polled = consumer.poll(timeout_ms=500, max_records=batch)
            if polled:
                _apply_or_resync(projection, consumer, polled, ops)
            if ops is not None:
                ops.tick(consumer, projection.positions)
            if metrics_file is not None and time.monotonic() - written > METRICS_EVERY_S:
                metrics_file.write_bytes(orjson.dumps({"worker": instance, **projection.totals.as_dict()}))
                written = time.monotonic()
    finally:
        consumer.close(autocommit=False)
        t = projection.totals
        log.info("stopped: %d records in %d batches, %.0f records/s while applying", t.records, t.batches, t.rate())


def _apply_or_resync(projection: Projection, consumer: KafkaConsumer, polled: dict,
                     ops: Optional["ProjectorOps"] = None) -> None:
    try:
        conflict = projection.apply(polled)
    except redis.RedisError as error:  # the script may or may not have run: the stored offsets tell
        log.error("Redis failed during a batch (%s: %s); resuming from the stored offsets in 1 s",
                  type(error).__name__, error)
        time.sleep(1.0)
        _resync(projection, consumer)
        return
    if conflict is not None:
        if ops is not None:
            ops.conflicts.inc()
        log.warning("stored offset of %s is %s, not what this worker expected (another projector took the "
                    "partition, or the projection was wiped): nothing written; resuming from the stored offsets",
                    conflict.field, "none" if conflict.stored is None else conflict.stored)
        _resync(projection, consumer)


def _resync(projection: Projection, consumer: KafkaConsumer) -> None:
    while True:
        try:
            positions = projection.own(consumer.assignment())
            break
        except redis.RedisError as error:
            log.error("Redis unreachable (%s: %s); retrying in 1 s", type(error).__name__, error)
            time.sleep(1.0)
    _seek(consumer, positions)
    log.info("resumed at the stored offsets: %s", _describe(positions))


def catch_up(projection: Projection, bootstrap: str, batch: int = DEFAULT_BATCH, timeout_s: float = 60.0,
             until: Optional[dict[str, int]] = None) -> Totals:
    """Apply every record from the stored offsets up to the end offsets seen now (no group), or
    up to `until` ({"topic:partition": next offset}, absent = nothing) when given."""
    consumer = KafkaConsumer(**consumer_config(bootstrap, batch), group_id=None)
    try:
        topics = projection.topics
        assigned = []
        for topic in (topics.results, topics.outcomes):
            partitions = consumer.partitions_for_topic(topic)
            if not partitions:
                raise LookupError(f"topic {topic!r} does not exist at {bootstrap}")
            assigned += [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(assigned)
        if until is None:
            ends = consumer.end_offsets(assigned)
        else:
            ends = {tp: until.get(offset_field(tp.topic, tp.partition), 0) for tp in assigned}
        _seek(consumer, projection.own(assigned))
        pending = {tp: end for tp, end in ends.items() if end > (projection.positions[tp] or 0)}
        consumer.pause(*(tp for tp in assigned if tp not in pending))
        while pending:
            polled = consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=batch)
            if not polled:
                raise TimeoutError(f"no records for {timeout_s:g}s while {len(pending)} partitions are unfinished")
            polled = {tp: [m for m in messages if m.offset < ends[tp]] for tp, messages in polled.items()}
            conflict = projection.apply(polled)
            if conflict is not None:
                raise ProjectionMoved(f"the stored offset of {conflict.field} changed to {conflict.stored} "
                                      "while rebuilding: another projector is writing this projection")
            for tp in list(pending):
                if (projection.positions[tp] or 0) >= pending[tp] or consumer.position(tp) >= pending[tp]:
                    del pending[tp]
                    consumer.pause(tp)
        return projection.totals
    finally:
        consumer.close(autocommit=False)
