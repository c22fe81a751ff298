"""The rules worker's ops server (services/common/ops.py): /livez, /readyz and Prometheus
/metrics on PLYLOG_OPS_PORT, fed from the Faust app by its signals and a timer.

Ready = the group assigned this worker its partitions, it recovered its table and stored
positions (Faust's rebalance completed), and the records not yet answered on its partitions
(the moves end offsets minus the stored positions) are at most PLYLOG_READY_LAG.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import faust
from faust.types import TP
from prometheus_client import Counter as PromCounter
from prometheus_client import Gauge, Histogram

from services.common.ops import OpsState, Readiness, serve
from services.common.settings import Settings

from .core import Counters
from .faust_adapter.recovery import superseded
from .ports import PositionStore

log = logging.getLogger("plylog.rules")
BATCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class RulesMetrics:
    def __init__(self, state: OpsState):
        r = state.registry
        self.records = PromCounter("plylog_rules_records", "move records folded (redeliveries included)", registry=r)
        self.results = PromCounter(
            "plylog_rules_results",
            "results produced, by status (accepted, duplicate, rejected) and rejection code",
            ["status", "code"],
            registry=r,
        )
        self.dead_letters = PromCounter("plylog_rules_dead_letters", "dead letters produced", registry=r)
        self.redelivered = PromCounter("plylog_rules_redelivered", "records skipped as already answered", registry=r)
        self.batch = Histogram(
            "plylog_rules_batch_seconds", "a batch from fold to stored positions", registry=r, buckets=BATCH_BUCKETS
        )
        self.lag = Gauge(
            "plylog_rules_lag",
            "records of plylog.moves not yet answered, per partition this worker owns",
            ["partition"],
            registry=r,
        )
        self.assigned = Gauge(
            "plylog_rules_assigned_partitions", "partitions of plylog.moves this worker owns", registry=r
        )
        self.recovery = Gauge(
            "plylog_rules_recovery_seconds",
            "the last recovery: from partitions assigned to the table recovered",
            registry=r,
        )
        self.recoveries = PromCounter("plylog_rules_recoveries", "recoveries completed", registry=r)

    def on_batch(self, counts: Counter, seconds: float) -> None:
        self.records.inc(counts["records"])
        self.results.labels("accepted", "").inc(counts["accepted"])
        self.results.labels("duplicate", "").inc(counts["duplicates"])
        for name, value in counts.items():
            if name.startswith("rejected:"):
                self.results.labels("rejected", name.split(":", 1)[1]).inc(value)
        self.dead_letters.inc(counts["deadletters"])
        self.redelivered.inc(counts["redelivered"])
        self.batch.observe(seconds)


def install(
    app: faust.App, positions: PositionStore, moves: str, counters: Counters, settings: Settings, worker_name: str
) -> OpsState | None:
    """Serve /livez, /readyz and /metrics for this worker (nothing when PLYLOG_OPS_PORT is unset)."""
    if not settings.ops_port:
        return None
    state = OpsState("rules", worker_name, settings.ready_lag)
    metrics = RulesMetrics(state)
    counters.listeners.append(metrics.on_batch)
    phase: dict[str, Any] = {"assigned_at": None, "recovered": False}

    @app.on_partitions_assigned.connect
    async def _assigned(sender: Any, *args: Any, **kwargs: Any) -> None:
        phase.update(assigned_at=time.monotonic(), recovered=False)

    @app.on_rebalance_complete.connect
    async def _recovered(sender: Any, *args: Any, **kwargs: Any) -> None:
        if superseded(app):
            return  # Faust signals a pass the next rebalance overtook too (faust_adapter workaround 4)
        if phase["assigned_at"] is not None:
            metrics.recovery.set(time.monotonic() - phase["assigned_at"])
        metrics.recoveries.inc()
        phase["recovered"] = True

    @app.timer(1.0)
    async def _refresh():
        state.beat()
        owned = sorted((tp for tp in app.consumer.assignment() if tp.topic == moves), key=lambda tp: tp.partition)
        lag = await _lag(app, owned, positions.position, metrics)
        metrics.assigned.set(len(owned))
        state.publish(
            Readiness(
                assigned=phase["assigned_at"] is not None,
                recovered=phase["recovered"],
                lag=lag,
                detail={"partitions": [tp.partition for tp in owned]},
            )
        )

    state.beat()
    serve(state, settings.ops_host, settings.ops_port)
    return state


async def _lag(app: faust.App, owned: list[TP], position: Callable[[int], int], metrics: RulesMetrics) -> int | None:
    """Records not yet answered on the owned partitions (None while Kafka does not answer)."""
    metrics.lag.clear()
    if not owned:
        return 0
    try:
        ends = await app.consumer.highwaters(*owned)
    except Exception as error:  # noqa: BLE001 - a broker away: lag unknown, not ready
        log.debug("lag unknown: %s", error)
        return None
    total = 0
    for tp in owned:
        behind = max(0, ends.get(tp, 0) - position(tp.partition) - 1)
        metrics.lag.labels(str(tp.partition)).set(behind)
        total += behind
    return total
