"""The projector's loops: consume results and outcomes, plan each batch, apply it with its offsets.

Both loops feed a `Projection` (projection.py): this worker's idea of the stored offsets of the
partitions it owns, and `apply(poll)`, each partition's records with their offsets, fenced. The
offsets in Redis are the truth: after every partition assignment, and whenever a batch finds them moved
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
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import redis
from confluent_kafka import KafkaException

from services.common import heap
from services.common.stage_trace import StageTrace, event_id

from .consumer import Consumer, Positions, TopicPartition, config
from .projection import Projection, Totals
from .store import offset_field

if TYPE_CHECKING:
    from .ops import ProjectorOps

log = logging.getLogger("plylog.projector")

DEFAULT_BATCH = 2000


class ProjectionMoved(RuntimeError):
    """Another writer changed the stored offsets while `catch_up` ran."""


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
