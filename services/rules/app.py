"""The rules worker: a Faust app with one agent over `plylog.moves` and a table of match states.

The agent runs the pipeline (pipeline.py) over ports the Faust adapter implements (faust_adapter/);
timers sweep finished matches and write the counters. docs/rules-worker.md tells the whole story.
"""

from __future__ import annotations

import logging
from typing import Any, cast

import faust
import orjson
from mode import CrashingSupervisor

from services.common import heap
from services.common.settings import Settings
from services.common.stage_trace import open_trace

from . import stop_deadline
from .batching import RecordBuffer
from .core import Counters, RulesCore
from .faust_adapter.config import app_settings
from .faust_adapter.fetch import install_fetch_path
from .faust_adapter.group import FaustGroup, commit_only_stored_positions
from .faust_adapter.producer import FaustProducer
from .faust_adapter.recovery import superseded
from .faust_adapter.table import MatchTable, TablePositions
from .ops import install as install_ops
from .pipeline import Pipeline
from .report import BatchReport
from .sweep import forget_finished

log = logging.getLogger("plylog.rules")
RAW: dict[str, Any] = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw"}


def create_app(settings: Settings, partitions: int, worker_name: str = "rules-1") -> faust.App:
    topics, rules = settings.topics, settings.rules
    datadir = settings.data_dir or settings.home / "rules" / worker_name
    datadir.mkdir(parents=True, exist_ok=True)
    app = faust.App(topics.rules_group, **app_settings(settings, partitions, worker_name, str(datadir)))
    moves = app.topic(topics.moves, partitions=partitions, internal=False, **RAW)
    table = cast(
        MatchTable,
        app.Table(
            "matches",
            default=None,
            partitions=partitions,
            schema=faust.Schema(**RAW),
            key_type=bytes,
            value_type=bytes,
            help="match states (JSON) and partition positions by key",
        ),
    )
    positions, group = TablePositions(table), FaustGroup(app, topics.moves)
    buffer = RecordBuffer(rules.batch_max, rules.batch_within_s, rules.buffer_capacity)
    trace = open_trace(settings.trace_dir, "rules")
    install_fetch_path(app, topics.moves, buffer.extend, rules.fetch_max_wait_ms, trace)
    commit_only_stored_positions(app, positions, group)
    counters = Counters()
    outputs = {"results": topics.results, "outcomes": topics.outcomes, "deadletter": topics.deadletter}
    pipeline = Pipeline(
        RulesCore(partitions),
        buffer,
        FaustProducer(app, outputs, rules.busy_linger_s),
        table,
        positions,
        group,
        in_flight=rules.in_flight_records,
        busy_records=rules.busy_records,
        on_stored=BatchReport(counters).stored,
        trace=trace,
    )
    install_ops(app, positions, topics.moves, counters, settings, worker_name)  # /livez /readyz /metrics

    # A failed batch stops the worker (a restarted agent would read on past it; a restarted worker
    # resumes from its stored positions). The stream stays empty: the consumer fills `buffer`.
    @app.agent(moves, concurrency=1, name="fold_moves", supervisor_strategy=CrashingSupervisor)
    async def fold_moves(stream: faust.StreamT) -> None:
        try:
            await pipeline.run()
        except Exception as error:
            stop_deadline.arm(rules.stop_deadline_s, f"a failed batch ({type(error).__name__}: {error})")
            raise

    @app.timer(rules.sweep_interval_s)
    async def sweep() -> None:
        """Delete the finished matches the fold has forgotten (sweep.py)."""
        forget_finished(table, positions, group.owned(), counters)

    @app.timer(5.0)
    async def write_metrics() -> None:
        """The counters as JSON beside the worker's data, for `plylog status` and dashboards."""
        (datadir / "metrics.json").write_bytes(orjson.dumps({"worker": worker_name, **counters.as_dict()}))
        if trace is not None:
            trace.flush()

    @app.on_partitions_assigned.connect
    async def log_assignment(sender: faust.App, *args: Any, **kwargs: Any) -> None:
        log.info("assigned partitions of %s: %s", topics.moves, sorted(group.owned()))

    @app.on_rebalance_complete.connect
    async def mark_ready(sender: faust.App, *args: Any, **kwargs: Any) -> None:
        if superseded(app):
            log.info("a recovery pass the next rebalance overtook has ended; ready once the next one completes")
            return
        log.info(
            "recovered; stored positions of %s: %s; changelog records read since the last recovery "
            "(partition: records, offsets): %s",
            topics.moves,
            {partition: positions.position(partition) for partition in sorted(group.owned())},
            {p: f"{n}, {lo}-{hi}" for p, (n, lo, hi) in table.applied_since().items()} or "none",
        )
        heap.settle()  # recovered: what is here now lives as long as the worker (services/common/heap.py)
        if settings.ready_file is not None:
            settings.ready_file.touch()

    return app
