"""The projector's ops server (services/common/ops.py): /livez, /readyz and Prometheus /metrics on
PLYLOG_OPS_PORT, fed by the consuming loop (services/projector/runner.py).

Ready = the group assigned this projector its partitions, it sought to the offsets stored in
Redis (its recovery), and the records between those offsets and the end of its partitions are at
most PLYLOG_READY_LAG.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable

from prometheus_client import Counter as PromCounter
from prometheus_client import Gauge, Histogram

from services.common.ops import OpsState, Readiness, every, serve
from services.common.settings import Settings

from .consumer import Consumer, TopicPartition

log = logging.getLogger("plylog.projector")
BATCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
VERDICTS = (
    "applied",
    "stale",
    "duplicates",
    "rejected",
    "rated",
    "unrated",
    "outcomes_repeated",
    "outcomes_refused",
    "unreadable",
    "skipped",
)


class ProjectorOps:
    """Metrics and readiness of one projector; the loop calls the methods, the server thread reads."""

    def __init__(self, state: OpsState):
        self.state = state
        r = state.registry
        self.records = PromCounter(
            "plylog_projector_records", "records applied, by kind (result, outcome, unreadable)", ["kind"], registry=r
        )
        self.verdicts = PromCounter(
            "plylog_projector_results",
            "what applying a record did: applied, stale, "
            "duplicates, rejected (results); rated, unrated, outcomes_repeated, outcomes_refused (outcomes: "
            "refused when it disagrees with the match the projection saw finish, docs/security/kafka.md); "
            "unreadable, skipped",
            ["verdict"],
            registry=r,
        )
        self.batch = Histogram(
            "plylog_projector_batch_seconds",
            "a poll's records planned and applied (one script per partition)",
            registry=r,
            buckets=BATCH_BUCKETS,
        )
        self.lag = Gauge(
            "plylog_projector_lag",
            "records between the stored offset and the end of each owned partition",
            ["topic", "partition"],
            registry=r,
        )
        self.assigned_partitions = Gauge(
            "plylog_projector_assigned_partitions", "partitions this projector owns", registry=r
        )
        self.recovery = Gauge(
            "plylog_projector_recovery_seconds",
            "the last recovery: from the group's rebalance "
            "starting to the worker resuming at the offsets stored in Redis",
            registry=r,
        )
        self.conflicts = PromCounter(
            "plylog_projector_fenced_batches",
            "batches refused because the stored offsets had moved (a zombie fenced off, a wipe)",
            registry=r,
        )
        self.redis_failures = PromCounter(
            "plylog_projector_redis_failures",
            "calls to Redis that failed (it was away or refused), by where: own (taking partitions: "
            "retried every second) or batch (resumed from the stored offsets)",
            ["where"],
            registry=r,
        )
        self._revoked_at: float | None = time.monotonic()
        self._assigned = False
        self._lag: int | None = None
        self._owned: list[TopicPartition] = []
        self._due = every(2.0)

    def on_batch(self, counts: Counter, seconds: float) -> None:
        for kind in ("result", "outcome", "unreadable"):
            self.records.labels(kind).inc(counts[kind])
        for verdict in VERDICTS:
            if counts[verdict]:
                self.verdicts.labels(verdict).inc(counts[verdict])
        self.batch.observe(seconds)

    def revoked(self) -> None:
        self._revoked_at = time.monotonic()
        self._assigned = False

    def assigned(self, partitions: Iterable[TopicPartition]) -> None:
        if self._revoked_at is not None:
            self.recovery.set(time.monotonic() - self._revoked_at)
            self._revoked_at = None
        self._assigned = True
        self._owned = sorted(partitions)
        self.assigned_partitions.set(len(self._owned))

    def tick(self, consumer: Consumer, positions: dict) -> None:
        """From the loop after every poll: beat, and every 2 s the lag (from the last fetch responses)."""
        self.state.beat()
        if not self._due():
            return
        if self._assigned:
            self._lag = self._measure_lag(consumer, positions)
        self.state.publish(
            Readiness(
                assigned=self._assigned,
                recovered=self._assigned,
                lag=self._lag,
                detail={"partitions": [f"{tp.topic}[{tp.partition}]" for tp in self._owned]},
            )
        )

    def _measure_lag(self, consumer: Consumer, positions: dict) -> int | None:
        owned = [tp for tp in self._owned if tp in positions]
        if not owned:
            return 0
        try:
            ends = consumer.end_offsets(owned, cached=True)
        except Exception as error:  # noqa: BLE001 - a broker away: lag unknown, not ready
            log.debug("lag unknown: %s", error)
            return None
        self.lag.clear()
        total = 0
        for tp in owned:
            behind = max(0, ends.get(tp, 0) - (positions.get(tp) or 0))
            self.lag.labels(tp.topic, str(tp.partition)).set(behind)
            total += behind
        return total


def start(settings: Settings, instance: str) -> ProjectorOps | None:
    """The projector's ops server on PLYLOG_OPS_PORT (None when unset)."""
    if not settings.ops_port:
        return None
    ops = ProjectorOps(OpsState("projector", instance, settings.ready_lag))
    ops.state.beat()
    serve(ops.state, settings.ops_host, settings.ops_port)
    return ops
