"""The projector's loops: consume results and outcomes, plan each batch, apply it with its offsets.

`Projection` is what both loops share: this worker's idea of the stored offsets of the
partitions it owns, and `apply(records)` -> one atomic script per batch. The offsets in Redis
are the truth: after every partition assignment, and whenever a batch finds them moved
(another worker, a wipe), the worker reads them again and seeks there; Kafka's committed
offsets are never used.

- `run_group`: the service. A librdkafka consumer (consumer.py) in the group `<topic prefix><consumer>`
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import redis
from confluent_kafka import KafkaException

from services.common import heap
from services.common.settings import Topics
from services.common.stage_trace import StageTrace, event_id

from .consumer import Consumer, Positions, TopicPartition, config
from .plan import Consumed, Item, decode, disagreement, needs, plan
from .seqs import KnownSeqs
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
        return {
            "records": self.records,
            "batches": self.batches,
            "batch_seconds_total": round(self.seconds, 6),
            **{name: self.counts[name] for name in sorted(self.counts)},
        }


class Projection:
    """Applies batches for the partitions this worker owns, fenced by the stored offsets.

    An outcome is applied only when it agrees with the match the projection saw finish (`confirm`).
    The outcome and its match's final result are on different topics, read at different paces
    (maybe by different projectors), so an outcome can come before its result is projected; it
    then waits, with every outcome after it (ratings are folded in the topic's order): the
    outcomes partition is `held` at it, and the runner reads it again a moment later. It waits
    until the match's home results partition is projected up to its `results_end` as it was when
    the outcome was first seen: the rules worker produces an outcome only once its result is
    acknowledged, so a true outcome's result is before that offset. If the match has not finished
    by then, or finished otherwise, the outcome is refused (counted, one log line). A rebuild
    decides the same: its horizon (the end it rebuilds to) is at or after the live one, and a
    finished match never changes (docs/security/kafka.md, "Defence in depth")."""

    def __init__(self, store: Store, topics: Topics, publish: bool = True):
        self.store = store
        self.topics = topics
        self.publish = publish
        self.positions: Positions = {}  # next offset as stored (None: none stored)
        self.seqs = KnownSeqs()  # of the partitions owned, what the last batches wrote
        self.totals = Totals()
        #: results partition -> its end offset now (the runner's consumer, or the end of a rebuild)
        self.results_end: Callable[[int], int] | None = None
        self.horizons: dict[int, int] = {}  # outcome offset -> results end when it was first seen
        self.held: TopicPartition | None = None  # the outcomes partition, when the last apply held it
        #: called with every applied poll's counts and duration (the Prometheus metrics, ops.py)
        self.listeners: list[Callable[[Counter, float], None]] = []

    def own(self, partitions: Iterable[TopicPartition]) -> Positions:
        """Take partitions over at their stored offsets; returns them (the caller seeks)."""
        partitions = list(partitions)
        self._forget_seqs(partitions)
        stored = self.store.stored_offsets([offset_field(tp.topic, tp.partition) for tp in partitions])
        for tp in partitions:
            self.positions[tp] = stored[offset_field(tp.topic, tp.partition)]
        return {tp: self.positions[tp] for tp in partitions}

    def disown(self, partitions: Iterable[TopicPartition]) -> None:
        partitions = list(partitions)
        self._forget_seqs(partitions)
        for tp in partitions:
            self.positions.pop(tp, None)

    def _forget_seqs(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            if tp.topic == self.topics.results:
                self.seqs.forget(tp.partition)
            else:
                self.horizons.clear()

    def confirm(self, items: list[Item]) -> tuple[dict[int, str], int | None]:
        """(outcome offset -> why it is refused, for those decided; the index of the first outcome
        that cannot be decided yet, or None). See the class's docstring for the rule."""
        outcomes = [(i, item) for i, item in enumerate(items) if item.kind == "outcome"]
        keys = self.store.keys
        wanted = [(item.data["match_id"], keys.home(item.data["match_id"])) for _, item in outcomes]
        refusals: dict[int, str] = {}
        for (index, item), (stored, fields), (_, partition) in zip(
            outcomes, self.store.finished(wanted, self.topics.results), wanted, strict=True
        ):
            offset = item.consumed.offset
            why = disagreement(item.data, fields)
            if not why or fields[0] in (b"over", "over"):
                refusals[offset] = why  # finished: its fields are final
                continue
            horizon = self.horizons.get(offset)
            if horizon is None:
                try:
                    horizon = self.horizons[offset] = self.results_end(partition) if self.results_end else 0
                except Exception as error:  # noqa: BLE001 - no end known now: wait, ask again later
                    log.info(
                        "no end offset of %s[%d] yet (%s); the outcomes wait", self.topics.results, partition, error
                    )
                    return refusals, index
            if (stored or 0) < horizon:
                return refusals, index  # its result may not be projected yet: wait for it
            refusals[offset] = f"{why} after {self.topics.results}[{partition}] was projected to offset {horizon}"
        return refusals, None

    def apply(self, polled: dict[TopicPartition, list]) -> Conflict | None:
        """Apply one poll's records (per partition in offset order), one script per partition. None
        when done, or the Conflict when a partition's stored offset was not ours (nothing of that
        partition written; the partitions before it stay applied: re-own and seek)."""
        started = time.perf_counter()
        counts, commands, applied = Counter(), 0, 0
        self.held = None
        # one script per partition (one hash slot each); the results first, so that an outcome in
        # the same poll as its match's final result finds it projected and is not held
        for tp, messages in sorted(polled.items(), key=lambda item: (item[0].topic == self.topics.outcomes, item[0])):
            if tp not in self.positions:
                continue  # revoked since it was fetched
            expected = self.positions[tp]
            fresh = [m for m in messages if expected is None or m.offset >= expected]
            if fresh and expected is not None and fresh[0].offset > expected:
                log.warning(
                    "%s[%d]: next record at offset %d, expected %d (records missing from the topic?)",
                    tp.topic,
                    tp.partition,
                    fresh[0].offset,
                    expected,
                )
            if not fresh:
                continue
            records = [Consumed(tp.topic, tp.partition, m.offset, m.value) for m in fresh]
            planned, ran, conflict = self._apply_records(records)
            if conflict is not None:
                return conflict  # what was applied before stays applied, with its offsets
            taken = planned["result"] + planned["outcome"] + planned["unreadable"]  # fewer when held
            counts, commands, applied = counts + planned, commands + ran, applied + taken
        if applied:
            self._count(applied, counts, commands, time.perf_counter() - started)
        return None

    def _apply_records(self, records: list[Consumed]) -> tuple[Counter, int, Conflict | None]:
        """Plan and apply `records` with their offsets: (counts, commands run, conflict or None).
        If Redis refuses the script's data (it validates nothing of ours; planning should have
        caught it), the records are applied in halves, down to the one that fails, which is
        skipped (its offset is stored, nothing else) and counted: one bad record never wedges."""
        items = decode(records, self.topics.outcomes)
        refusals: dict[int, str] = {}
        if records[0].topic == self.topics.outcomes:
            refusals, held_at = self.confirm(items)
            if held_at is not None:
                self.held = TopicPartition(records[0].topic, records[0].partition)
                records, items = records[:held_at], items[:held_at]
                if not records:
                    return Counter(), 0, None
        wanted = needs(items)
        cached, unknown = self.seqs.split(wanted.matches)
        known = self.store.read_known(replace(wanted, matches=unknown))
        known.seqs.update(cached)
        batch = plan(items, known, self.store.keys, self.publish, refusals)
        advances = self._advances(records)
        written = True
        try:
            conflict = self.store.apply(batch.commands, advances)
        except (redis.DataError, redis.ResponseError) as error:
            failed = records[0]  # a script that failed half-way may have written some seqs
            self._forget_seqs([TopicPartition(failed.topic, failed.partition)])
            if len(records) > 1:
                middle = len(records) // 2
                first = self._apply_records(records[:middle])
                if first[2] is not None:
                    return first
                second = self._apply_records(records[middle:])
                return first[0] + second[0], first[1] + second[1], second[2]
            c = records[0]
            log.warning(
                "skipping %s[%d]@%d: Redis refused what it gives (%s: %s)",
                c.topic,
                c.partition,
                c.offset,
                type(error).__name__,
                error,
            )
            batch.counts = Counter({"skipped": 1})
            conflict = self.store.apply([], advances)
            written = False
        if conflict is None:
            for name, (_, new) in advances.items():
                self.positions[_tp_of(name)] = new
            if written:
                self.seqs.remember(wanted.matches, known.seqs)
        return batch.counts, len(batch.commands), conflict

    def _advances(self, records: list[Consumed]) -> dict[str, tuple[int | None, int]]:
        """field -> (stored next offset expected, next offset after `records`), per partition."""
        advances: dict[str, tuple[int | None, int]] = {}
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
        log.info(
            "batch %d: %d results (%d applied, %d stale, %d duplicates, %d rejected), %d outcomes "
            "(%d rated, %d unrated, %d repeated, %d refused), %d unreadable, %d skipped -> %d commands in %.1f ms",
            t.batches,
            counts["result"],
            counts["applied"],
            counts["stale"],
            counts["duplicates"],
            counts["rejected"],
            counts["outcome"],
            counts["rated"],
            counts["unrated"],
            counts["outcomes_repeated"],
            counts["outcomes_refused"],
            counts["unreadable"],
            counts["skipped"],
            commands,
            took * 1000,
        )


def _describe(positions: Positions) -> str:
    return (
        ", ".join(f"{tp.topic}[{tp.partition}]@{'start' if o is None else o}" for tp, o in sorted(positions.items()))
        or "none"
    )


METRICS_EVERY_S = 5.0
READER_GROUP = "reader-rebuild"  # catch_up's consumer group, after the topic prefix
HOLD_S = 0.2  # how soon a held outcome is looked at again (its result is usually a poll behind)


def run_group(
    projection: Projection,
    bootstrap: str,
    group: str,
    instance: str,
    batch: int = DEFAULT_BATCH,
    ready_file: Path | None = None,
    metrics_file: Path | None = None,
    ops: ProjectorOps | None = None,
    trace: StageTrace | None = None,
) -> None:
    """Consume as a member of `group` until SIGTERM/SIGINT; write the running totals (records,
    applied, unreadable and skipped ones, ...) to `metrics_file` every few seconds; feed the ops
    server's metrics and readiness (`ops`) when there is one; mark each poll's results `polled`
    and `applied` in the stage `trace` when there is one (services/common/stage_trace.py)."""
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))
    consumer = Consumer(config(bootstrap, group, instance))

    def assigned(partitions: list[TopicPartition]) -> Positions:
        positions = _own(projection, partitions, ops)  # in librdkafka's callback: an exception would end the loop
        log.info("assigned partitions: %s", _describe(positions))
        if ops is not None:
            ops.assigned(partitions)
        if partitions:
            heap.settle()  # owned: what is here now lives as long as the projector (services/common/heap.py)
        if partitions and ready_file is not None and not ready_file.exists():
            ready_file.write_text("ready\n")
        return positions

    def revoked(partitions: list[TopicPartition]) -> None:
        projection.disown(partitions)
        if ops is not None:
            ops.revoked()

    topics = projection.topics
    projection.results_end = lambda p: consumer.end_offsets([TopicPartition(topics.results, p)])[
        TopicPartition(topics.results, p)
    ]
    consumer.subscribe([topics.results, topics.outcomes], assigned, revoked)
    if ops is not None:
        projection.listeners.append(ops.on_batch)
    log.info("consuming %s and %s as %s in group %s", topics.results, topics.outcomes, instance, group)
    written, held_until = 0.0, None
    try:
        while not stopping:
            polled = consumer.poll(batch, 0.5)
            if polled:
                ids = _traced(trace, "polled", polled)
                _apply_or_resync(projection, consumer, polled, ops)
                if trace is not None:
                    trace.mark("applied", ids)
            if projection.held is not None:  # read the outcomes again from the held one, in a moment
                held, projection.held = projection.held, None
                try:
                    consumer.pause([held])
                    consumer.seek({held: projection.positions.get(held)})
                    held_until = (held, time.monotonic() + HOLD_S)
                except KafkaException as error:  # revoked meanwhile, say: the stored offsets tell
                    log.warning("holding %s[%d] failed (%s); resuming from the stored offsets", *held, error)
                    _resync(projection, consumer, ops)
            if held_until is not None and time.monotonic() >= held_until[1]:
                consumer.resume([held_until[0]])
                held_until = None
            if ops is not None:
                ops.tick(consumer, projection.positions)
            if metrics_file is not None and time.monotonic() - written > METRICS_EVERY_S:
                metrics_file.write_bytes(orjson.dumps({"worker": instance, **projection.totals.as_dict()}))
                written = time.monotonic()
                if trace is not None:
                    trace.flush()
    finally:
        consumer.close()
        t = projection.totals
        log.info("stopped: %d records in %d batches, %.0f records/s while applying", t.records, t.batches, t.rate())


def _traced(trace: StageTrace | None, stage: str, polled: dict) -> list[str | None]:
    """Mark the results of a poll in the stage trace; their event ids (none when it is off)."""
    if trace is None:
        return []
    ids = [event_id(m.value) for tp, messages in polled.items() for m in messages]
    trace.mark(stage, ids)
    return ids


def _apply_or_resync(projection: Projection, consumer: Consumer, polled: dict, ops: ProjectorOps | None = None) -> None:
    try:
        conflict = projection.apply(polled)
    except redis.RedisError as error:  # the script may or may not have run: the stored offsets tell
        log.error(
            "Redis failed during a batch (%s: %s); resuming from the stored offsets in 1 s", type(error).__name__, error
        )
        if ops is not None:
            ops.redis_failures.labels("batch").inc()
        time.sleep(1.0)
        _resync(projection, consumer, ops)
        return
    if conflict is not None:
        if ops is not None:
            ops.conflicts.inc()
        log.warning(
            "stored offset of %s is %s, not what this worker expected (another projector took the "
            "partition, or the projection was wiped): nothing written; resuming from the stored offsets",
            conflict.field,
            "none" if conflict.stored is None else conflict.stored,
        )
        _resync(projection, consumer, ops)


def _own(projection: Projection, partitions: list[TopicPartition], ops: ProjectorOps | None = None) -> Positions:
    """`projection.own(partitions)`, once Redis answers (it holds the offsets to start from)."""
    while True:
        try:
            return projection.own(partitions)
        except redis.RedisError as error:
            log.error("Redis unreachable (%s: %s); retrying in 1 s", type(error).__name__, error)
            if ops is not None:
                ops.redis_failures.labels("own").inc()
            time.sleep(1.0)


def _resync(projection: Projection, consumer: Consumer, ops: ProjectorOps | None = None) -> None:
    positions = _own(projection, consumer.assignment(), ops)
    consumer.seek(positions)
    log.info("resumed at the stored offsets: %s", _describe(positions))


def catch_up(
    projection: Projection,
    bootstrap: str,
    batch: int = DEFAULT_BATCH,
    timeout_s: float = 60.0,
    until: dict[str, int] | None = None,
) -> Totals:
    """Apply every record from the stored offsets up to the end offsets seen now (no group), or
    up to `until` ({"topic:partition": next offset}, absent = nothing) when given."""
    # assign() only, nothing committed; librdkafka still looks the group up, so it is one the
    # reader's Kafka user may use (services/common/kafka_acls.py)
    consumer = Consumer(config(bootstrap, f"{projection.topics.prefix}{READER_GROUP}"))
    try:
        topics = projection.topics
        assigned = []
        for topic in (topics.results, topics.outcomes):
            try:
                assigned += [TopicPartition(topic, p) for p in consumer.partitions_for(topic)]
            except LookupError:
                raise LookupError(f"topic {topic!r} does not exist at {bootstrap}") from None
        if until is None:
            ends = consumer.end_offsets(assigned)
        else:
            ends = {tp: until.get(offset_field(tp.topic, tp.partition), 0) for tp in assigned}
        projection.results_end = lambda p: ends[TopicPartition(topics.results, p)]  # the end it rebuilds to
        consumer.assign(projection.own(assigned))
        pending = {tp: end for tp, end in ends.items() if end > (projection.positions[tp] or 0)}
        consumer.pause(tp for tp in assigned if tp not in pending)
        while pending:
            polled = consumer.poll(batch, timeout_s)
            if not polled:
                raise TimeoutError(f"no records for {timeout_s:g}s while {len(pending)} partitions are unfinished")
            polled = {tp: [m for m in messages if m.offset < ends[tp]] for tp, messages in polled.items()}
            conflict = projection.apply(polled)
            if projection.held is not None:  # read again from the held outcome (its results come meanwhile)
                consumer.seek({projection.held: projection.positions.get(projection.held)})
            if conflict is not None:
                raise ProjectionMoved(
                    f"the stored offset of {conflict.field} changed to {conflict.stored} "
                    "while rebuilding: another projector is writing this projection"
                )
            for tp in list(pending):
                if (projection.positions[tp] or 0) >= pending[tp] or (consumer.position(tp) or 0) >= pending[tp]:
                    del pending[tp]
                    consumer.pause([tp])
        return projection.totals
    finally:
        consumer.close()
