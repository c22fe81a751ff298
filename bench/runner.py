"""Run scenarios several times (round-robin, so a noisy moment hits one run of each rather than
every run of one), then reduce every figure to median, min and max over the runs."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import platform
import shutil
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import peer, scenarios
from .figures import FIGURES, derive, summary_of, summary_sources
from .measure import percentile, spread
from .scenarios import Context, Params, RunResult
from .stack import BenchStack


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    run: Callable[[Context], Awaitable[RunResult]]
    main: str  # the figure that picks the run whose curves are plotted (the median one)
    requires: tuple[str, ...] = ()
    needs_stack: bool = True  # Kafka and Redis (the peer needs neither)
    unavailable: Callable[[], str | None] = lambda: None  # why it cannot run here (it is skipped), or None
    max_runs: int | None = None  # runs per invocation at most (a scenario that repeats its measure itself)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "baseline",
            "raw Kafka pass-through: aiokafka consume -> produce, no decoding",
            scenarios.baseline,
            "records_per_s",
        ),
        Scenario(
            "pipeline",
            "burst of moves: rules worker alone, then rules worker + projector",
            scenarios.pipeline,
            "moves_per_s",
            requires=("baseline",),
        ),
        Scenario(
            "latency",
            "closed-loop bots at a fixed offered rate, produce -> view readable",
            scenarios.latency_run,
            "p99_ms",
        ),
        Scenario(
            "floor",
            "the latency scenario's load on the design's hops with no work at them (bench/hops.py)",
            scenarios.floor,
            "p99_ms",
        ),
        Scenario(
            "replay", "offline fold per game (one core); plylog rebuild", scenarios.replay, "strands_records_per_s"
        ),
        Scenario("scale", "the same burst on 1, 2 and 3 rules workers", scenarios.scale, "workers_2_moves_per_s"),
        Scenario("memory", "RSS with many active matches", scenarios.memory, "rules_rss_mib"),
        Scenario(
            "recovery",
            "a rules worker SIGKILLed with a long history of finished matches in the log, restarted "
            "(three kills in one run: the history takes most of a run to build)",
            scenarios.recovery,
            "recovery_s",
            max_runs=1,
        ),
        Scenario("http", "closed-loop HTTP bots through the gateway (wait=true)", scenarios.http, "moves_per_s"),
        Scenario(
            "ws",
            "closed-loop clients over the gateway's seat socket (2 per match), then one client alone",
            scenarios.ws,
            "moves_per_s",
        ),
        Scenario(
            "peer",
            "boardgame.io 0.50.2 playing Strands: closed loop, then at the latency scenario's offered rate",
            peer.run,
            "moves_per_s",
            needs_stack=False,
            unavailable=peer.unavailable,
        ),
    ]
}


def plan(names: list[str]) -> list[str]:
    """The scenarios to run, in the canonical order, with what they need (pipeline: baseline)."""
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise KeyError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    wanted = set(names or SCENARIOS)
    for name in list(wanted):
        wanted.update(SCENARIOS[name].requires)
    return [n for n in SCENARIOS if n in wanted]


def needs_stack(names: list[str]) -> bool:
    """Whether any of these scenarios (or what they require) measures on Kafka and Redis."""
    return any(SCENARIOS[name].needs_stack for name in plan(names))


def run(
    stack: BenchStack, params: Params, names: list[str], console: Console, mode: str, profile_dir: Path | None = None
) -> dict:
    """Every run of every scenario; returns the report (see bench/report.py for its files)."""
    order = plan(names)
    skipped = {name: reason for name in order if (reason := SCENARIOS[name].unavailable())}
    for name, reason in skipped.items():  # one line each, once: nothing of it is measured
        console.print(f"[yellow]{name}: skipped: {escape(reason)}[/yellow]", soft_wrap=True)
    order = [name for name in order if name not in skipped]
    shutil.rmtree(stack.work_dir / "runs", ignore_errors=True)  # logs of the previous invocation
    on_stack = any(SCENARIOS[name].needs_stack for name in order)
    report = {
        "version": 1,
        "mode": mode,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "params": dataclasses.asdict(params),
        "host": _host(),
        "scenarios": {},
        "skipped": skipped,
        "stack": {"kafka": stack.bootstrap, "redis": stack.redis_url, "partitions": stack.partitions}
        if on_stack
        else None,
    }
    outcomes: dict[str, list] = {name: [] for name in order}
    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        ctx = Context(stack, params, say=lambda text: bar.console.print(f"[dim]{text}[/dim]"), profile_dir=profile_dir)
        total = bar.add_task("all runs", total=sum(runs_of(SCENARIOS[name], params) for name in order))
        current = bar.add_task("", total=1000)
        ctx.step = lambda fraction: bar.update(current, completed=int(min(1.0, fraction) * 1000))
        for name in warmups(order) if params.warmup and on_stack else []:
            bar.update(current, description="warm-up (not recorded)", completed=0)
            _one_run(SCENARIOS[name], ctx, bar.console, "warm-up, not recorded: ")
        for number in range(params.runs):
            ctx.run_number = number + 1
            for name in order:
                if number >= runs_of(SCENARIOS[name], params):
                    continue
                bar.update(
                    current, description=f"{name} (run {number + 1}/{runs_of(SCENARIOS[name], params)})", completed=0
                )
                outcomes[name].append(_one_run(SCENARIOS[name], ctx, bar.console))
                bar.advance(total)
        bar.update(current, description="done", completed=1000)
    for name in order:
        report["scenarios"][name] = summarise(SCENARIOS[name], outcomes[name])
    derive(report["scenarios"])
    report["summary"] = summary_of(report["scenarios"])
    report["summary_sources"] = summary_sources(report["scenarios"])
    attach_goals(report)
    report["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    report["host"]["load_average_end"] = list(os.getloadavg())
    return report


def warmups(order: list[str]) -> list[str]:
    """Unrecorded runs on a fresh broker before the measured ones: a throughput blast, and before a
    latency figure one paced run too. The broker's JIT compiles the small-request paths only under
    that load: a cold broker made the first of three latency runs ~3× the others', and the floor,
    measured after it, looked better than the pipeline by as much (docs/benchmarks.md)."""
    return ["baseline"] + (["latency"] if {"latency", "floor"} & set(order) else [])


def runs_of(scenario: Scenario, params: Params) -> int:
    return min(params.runs, scenario.max_runs or params.runs)


def _one_run(scenario: Scenario, ctx: Context, console: Console, label: str = "") -> RunResult | Exception:
    started = time.perf_counter()
    try:
        result = asyncio.run(scenario.run(ctx))
    except Exception as error:  # noqa: BLE001 - one failed run must not lose the others
        console.print(f"[red]{scenario.name}: run failed: {type(error).__name__}: {error}[/red]")
        if os.environ.get("PLYLOG_DEBUG"):
            console.print(traceback.format_exc())
        return error
    main = result.figures.get(scenario.main)
    shown = f"{scenario.main} = {main:,.1f}" if main is not None else ", ".join(result.notes)
    console.print(f"{label}{scenario.name}: {shown} ({time.perf_counter() - started:.0f}s)")
    return result


def summarise(scenario: Scenario, outcomes: list) -> dict:
    runs = [r for r in outcomes if isinstance(r, RunResult)]
    keys = list(dict.fromkeys(k for r in runs for k in r.figures))
    figures = {k: spread([r.figures.get(k, math.nan) for r in runs]) for k in keys}
    summary = {
        "title": scenario.title,
        "runs": len(outcomes),
        "figures": figures,
        "notes": sorted({n for r in runs for n in r.notes}),
        "errors": [f"{type(e).__name__}: {e}" for e in outcomes if isinstance(e, Exception)],
    }
    median_run = _median_run(runs, scenario.main, figures.get(scenario.main, {}).get("median"))
    if median_run is not None:
        summary["series"] = {label: s.to_json() for label, s in median_run.series.items()}
        summary["latency_quantiles_ms"] = {label: _quantiles(values) for label, values in median_run.latencies.items()}
    return summary


def _median_run(runs: list[RunResult], key: str, median: float | None) -> RunResult | None:
    if not runs:
        return None
    if median is None:
        return runs[0]
    return min(runs, key=lambda r: abs(r.figures.get(key, math.inf) - median))


def _quantiles(sorted_values: list[float]) -> list[list[float]]:
    """(quantile %, ms) at every half percent and the max: enough for a CDF plot."""
    points = [[q / 2, round(percentile(sorted_values, q / 2), 3)] for q in range(1, 200)]
    return [*points, [100.0, round(sorted_values[-1], 3)]]


def attach_goals(report: dict) -> None:
    for figure in FIGURES:
        summary = report["scenarios"].get(figure.scenario)
        if summary is None or figure.goal is None or figure.key not in summary["figures"]:
            continue
        value = summary["figures"][figure.key]["median"]
        summary.setdefault("goals", {})[figure.key] = {
            "op": figure.goal.op,
            "value": figure.goal.value,
            "met": figure.goal.met(value),
        }


def _host() -> dict:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_start": list(os.getloadavg()),
    }
