"""The figures the summary and the docs' benchmarks page show, with their units and the issue's goals; the
figures made of two scenarios (ratios, computed once, here); the report's headline `summary`.

Goals are compared with, never asserted: a missed goal is reported, not a failure.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from .loadgen import GAMES


@dataclass(frozen=True)
class Goal:
    op: str  # ">=" or "<="
    value: float

    def met(self, measured: float | None) -> bool | None:
        if measured is None:
            return None
        return {">=": operator.ge, "<=": operator.le}[self.op](measured, self.value)

    def __str__(self) -> str:
        return f"{'≥' if self.op == '>=' else '≤'} {_number(self.value, 0 if float(self.value).is_integer() else 2)}"


@dataclass(frozen=True)
class Figure:
    scenario: str
    key: str
    label: str
    unit: str
    goal: Goal | None = None
    digits: int = 0

    def title(self, params: dict) -> str:
        return self.label.format(**params)

    def format(self, value: float | None) -> str:
        return "—" if value is None else _number(value, self.digits)


def _number(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


FIGURES: list[Figure] = [
    Figure("baseline", "records_per_s", "raw Kafka pass-through", "records/s"),
    Figure("baseline", "cpu_us_per_record", "pass-through CPU per record", "µs", digits=1),
    Figure("pipeline", "moves_per_s", "pipeline: moves applied in Redis", "moves/s", Goal(">=", 5000)),
    Figure("pipeline", "ratio_to_baseline", "pipeline / baseline", "", Goal(">=", 0.5), digits=2),
    Figure("pipeline", "vs_peer", "pipeline / boardgame.io closed loop", "×", digits=2),
    Figure("pipeline", "rules_moves_per_s", "rules worker only: results on Kafka", "moves/s"),
    Figure("pipeline", "rules_cpu_us_per_move", "rules worker CPU per move", "µs"),
    Figure("pipeline", "projector_cpu_us_per_result", "projector CPU per result", "µs"),
    Figure(
        "pipeline", "rules_cpu_vs_passthrough", "rules worker CPU per move / pass-through's per record", "×", digits=1
    ),
    Figure(
        "pipeline",
        "projector_cpu_vs_passthrough",
        "projector CPU per result / pass-through's per record",
        "×",
        digits=1,
    ),
    Figure("latency", "p50_ms", "latency p50 at {latency_rate:,.0f} moves/s, produce → view in Redis", "ms", digits=1),
    Figure("latency", "p50_vs_peer", "latency p50 / boardgame.io's at the same offered rate", "×", digits=2),
    Figure("latency", "p95_ms", "latency p95", "ms", digits=1),
    Figure("latency", "p99_ms", "latency p99", "ms", Goal("<=", 50), digits=1),
    Figure("latency", "p99_vs_peer", "latency p99 / boardgame.io's at the same offered rate", "×", digits=2),
    Figure("latency", "max_ms", "latency max", "ms", digits=1),
    Figure("latency", "results_p99_ms", "latency p99, produce → result on Kafka", "ms", digits=1),
    Figure("latency", "achieved_per_s", "offered rate held", "moves/s"),
    Figure("latency", "p99_vs_floor", "latency p99 / the floor's (below) in the same run", "×", digits=2),
    Figure(
        "latency",
        "p99_vs_faust_floor",
        "latency p99 / the floor's with the Faust relay (below) in the same run",
        "×",
        Goal("<=", 1.5),
        digits=2,
    ),
    Figure(
        "floor",
        "p50_ms",
        "latency floor p50 at {latency_rate:,.0f} moves/s: the same load on the design's hops "
        "with no work at them (bench/hops.py), produce → Redis",
        "ms",
        digits=1,
    ),
    Figure("floor", "p99_ms", "latency floor p99", "ms", digits=1),
    Figure("floor", "p99_vs_peer", "latency floor p99 / boardgame.io's at the same offered rate", "×", digits=2),
    Figure("floor", "results_p99_ms", "latency floor p99, produce → relayed on Kafka (two hops)", "ms", digits=1),
    Figure("floor", "achieved_per_s", "latency floor: offered rate held", "moves/s"),
    Figure(
        "floor",
        "faust_p50_ms",
        "latency floor with a Faust app as the relay (the rules worker's fetch path: "
        "uvloop, bounded long-poll, batch delivery; no rules), p50",
        "ms",
        digits=1,
    ),
    Figure("floor", "faust_p99_ms", "latency floor with the Faust relay, p99", "ms", digits=1),
    Figure("floor", "faust_p99_vs_peer", "latency floor with the Faust relay, p99 / boardgame.io's", "×", digits=2),
    *[
        Figure("replay", f"{game}_records_per_s", f"offline replay {game}", "records/s", Goal(">=", 20_000))
        for game in GAMES
    ],
    Figure("replay", "rebuild_results_per_s", "plylog rebuild", "results/s", Goal(">=", 20_000)),
    Figure("scale", "workers_1_moves_per_s", "1 rules worker", "moves/s"),
    Figure("scale", "workers_2_moves_per_s", "2 rules workers", "moves/s"),
    Figure("scale", "workers_3_moves_per_s", "3 rules workers", "moves/s"),
    Figure("scale", "speedup", "speed-up 2 vs 1 workers", "×", digits=2),
    Figure("scale", "speedup_3", "speed-up 3 vs 1 workers", "×", digits=2),
    Figure("scale", "workers_1_cpu_us_per_move", "rules CPU per move, 1 worker", "µs"),
    Figure("scale", "workers_2_cpu_us_per_move", "rules CPU per move, 2 workers (all added up)", "µs"),
    Figure("scale", "workers_3_cpu_us_per_move", "rules CPU per move, 3 workers (all added up)", "µs"),
    Figure("scale", "cpu_ratio_2", "rules CPU per move, 2 vs 1 workers", "×", digits=2),
    Figure("scale", "cpu_ratio_3", "rules CPU per move, 3 vs 1 workers", "×", digits=2),
    Figure("scale", "workers_2_no_standby_moves_per_s", "2 rules workers, no standby", "moves/s"),
    Figure("scale", "workers_3_no_standby_moves_per_s", "3 rules workers, no standby", "moves/s"),
    Figure("scale", "workers_2_no_standby_cpu_us_per_move", "rules CPU per move, 2 workers, no standby", "µs"),
    Figure("scale", "workers_3_no_standby_cpu_us_per_move", "rules CPU per move, 3 workers, no standby", "µs"),
    Figure("scale", "cpu_ratio_2_no_standby", "rules CPU per move, 2 vs 1 workers, no standby", "×", digits=2),
    Figure("scale", "cpu_ratio_3_no_standby", "rules CPU per move, 3 vs 1 workers, no standby", "×", digits=2),
    Figure("memory", "rules_rss_mib", "rules worker RSS, {memory_matches:,} active matches", "MiB", Goal("<=", 500)),
    Figure(
        "recovery",
        "recovery_s",
        "rules worker ready again after SIGKILL, {recovery_moves:,} finished-match "
        "moves and {recovery_active:,} active matches in the log",
        "s",
        Goal("<=", 5),
        digits=1,
    ),
    Figure(
        "recovery",
        "changelog_records",
        "changelog records a recovery reads (compacted, finished matches forgotten)",
        "records",
    ),
    Figure("recovery", "rss_mib", "rules worker RSS after that recovery", "MiB"),
    Figure("memory", "projector_rss_mib", "projector RSS, {memory_matches:,} active matches", "MiB"),
    Figure("http", "moves_per_s", "HTTP moves through the gateway, {http_bots} bots", "moves/s"),
    Figure("http", "vs_peer", "HTTP moves / boardgame.io closed loop", "×", digits=2),
    Figure("http", "p50_ms", "HTTP move p50 (request → applied result)", "ms", digits=1),
    Figure("http", "p99_ms", "HTTP move p99", "ms", digits=1),
    Figure("http", "gateway_cpu_us_per_move", "gateway CPU per HTTP move", "µs"),
    Figure(
        "ws",
        "moves_per_s",
        "seat-socket moves through the gateway, closed loop, {ws_matches} matches (2 sockets each)",
        "moves/s",
    ),
    Figure("ws", "steady_moves_per_s", "seat-socket moves, steady (median whole second)", "moves/s"),
    Figure("ws", "vs_peer", "seat-socket moves / boardgame.io closed loop", "×", digits=2),
    Figure("ws", "p50_ms", "seat-socket move p50 (action → its result message)", "ms", digits=1),
    Figure("ws", "p99_ms", "seat-socket move p99", "ms", digits=1),
    Figure("ws", "p99_vs_peer", "seat-socket move p99 / boardgame.io's closed-loop p99", "×", digits=2),
    Figure("ws", "gateway_cpu_us_per_move", "gateway CPU per seat-socket move", "µs"),
    Figure(
        "ws", "services_cpu_us_per_move", "gateway, rules worker and projector CPU per seat-socket move, added up", "µs"
    ),
    Figure(
        "ws",
        "machine_cpu_us_per_move",
        "the whole machine's CPU per seat-socket move (services, Kafka, Redis, clients)",
        "µs",
    ),
    Figure("ws", "cores_busy", "cores busy while the seat-socket clients played", "cores", digits=2),
    Figure(
        "ws", "cpu_bound_moves_per_s", "seat-socket moves/s the cores give at that cost, all of them busy", "moves/s"
    ),
    Figure("ws", "cpu_bound_vs_peer", "that / boardgame.io closed loop", "×", digits=2),
    Figure(
        "ws", "single_p50_ms", "one client alone over the seat socket: move p50 (action → its result)", "ms", digits=1
    ),
    Figure("ws", "single_p99_ms", "one client alone over the seat socket: move p99", "ms", digits=1),
    Figure(
        "peer", "moves_per_s", "boardgame.io: closed loop, {peer_matches} matches (2 socket.io clients each)", "moves/s"
    ),
    Figure("peer", "p99_ms", "boardgame.io closed-loop move p99 (move → the server's update)", "ms", digits=1),
    Figure("peer", "server_cpu_us_per_move", "boardgame.io server CPU per move, closed loop", "µs"),
    Figure("peer", "all_in_cpu_us_per_move", "boardgame.io: server and clients' CPU per move, closed loop", "µs"),
    Figure(
        "peer",
        "latency_p50_ms",
        "boardgame.io latency p50 at {latency_rate:,.0f} moves/s offered, {peer_latency_matches} matches",
        "ms",
        digits=1,
    ),
    Figure("peer", "latency_p99_ms", "boardgame.io latency p99 at that rate", "ms", digits=1),
    Figure("peer", "latency_achieved_per_s", "boardgame.io rate held (median whole second)", "moves/s"),
]

#: (scenario, figure, over scenario, over figure, the ratio's name in `scenario`): figures made of two
#: scenarios of the same invocation; the ratio of the medians, min – max from the extremes.
RATIOS: list[tuple[str, str, str, str, str]] = [
    ("pipeline", "moves_per_s", "baseline", "records_per_s", "ratio_to_baseline"),
    ("pipeline", "rules_moves_per_s", "baseline", "records_per_s", "rules_ratio_to_baseline"),
    ("pipeline", "rules_cpu_us_per_move", "baseline", "cpu_us_per_record", "rules_cpu_vs_passthrough"),
    ("pipeline", "projector_cpu_us_per_result", "baseline", "cpu_us_per_record", "projector_cpu_vs_passthrough"),
    ("pipeline", "moves_per_s", "peer", "moves_per_s", "vs_peer"),
    ("latency", "p50_ms", "peer", "latency_p50_ms", "p50_vs_peer"),
    ("latency", "p99_ms", "peer", "latency_p99_ms", "p99_vs_peer"),
    ("latency", "p99_ms", "floor", "p99_ms", "p99_vs_floor"),
    ("latency", "p99_ms", "floor", "faust_p99_ms", "p99_vs_faust_floor"),
    ("floor", "p50_ms", "peer", "latency_p50_ms", "p50_vs_peer"),
    ("floor", "p99_ms", "peer", "latency_p99_ms", "p99_vs_peer"),
    ("floor", "faust_p99_ms", "peer", "latency_p99_ms", "faust_p99_vs_peer"),
    ("http", "moves_per_s", "peer", "moves_per_s", "vs_peer"),
    ("ws", "moves_per_s", "peer", "moves_per_s", "vs_peer"),
    ("ws", "steady_moves_per_s", "peer", "steady_moves_per_s", "steady_vs_peer"),
    ("ws", "p99_ms", "peer", "p99_ms", "p99_vs_peer"),
    ("ws", "cpu_bound_moves_per_s", "peer", "moves_per_s", "cpu_bound_vs_peer"),
]

#: The report's top-level `summary`: key -> (scenario, figure) whose median it is; None when no
#: scenario measures it yet. Every value is a number, or null when its scenario did not run (and
#: neither did its FALLBACK's).
SUMMARY: dict[str, tuple[str, str] | None] = {
    "peer_moves_per_s": ("peer", "moves_per_s"),
    "pipeline_moves_per_s": ("pipeline", "moves_per_s"),
    "pipeline_vs_peer": ("pipeline", "vs_peer"),
    "peer_latency_p99_ms": ("peer", "latency_p99_ms"),
    "latency_p99_ms": ("latency", "p99_ms"),
    "latency_rate_held": ("latency", "rate_held"),  # achieved / offered moves/s (1.0: all of it)
    # over the p99 of a Faust app that only relays on the rules worker's fetch path, same invocation
    "latency_vs_faust_floor": ("latency", "p99_vs_faust_floor"),
    "floor_latency_p99_ms": ("floor", "p99_ms"),  # the same load on the hops alone (bench/hops.py)
    "floor_latency_vs_peer": ("floor", "p99_vs_peer"),
    "floor_faust_latency_vs_peer": ("floor", "faust_p99_vs_peer"),  # the first hop a Faust agent
    "client_moves_per_s": ("ws", "moves_per_s"),  # closed-loop clients through the gateway (seat sockets)
    "client_vs_peer": ("ws", "vs_peer"),
    "single_client_p50_ms": ("ws", "single_p50_ms"),  # one client alone, action -> its result message
    # the seat-socket moves/s the whole machine's CPU per move allows (every core busy) / the peer's
    "client_cpu_bound_vs_peer": ("ws", "cpu_bound_vs_peer"),
    "rules_cpu_vs_passthrough": ("pipeline", "rules_cpu_vs_passthrough"),
    "projector_cpu_vs_passthrough": ("pipeline", "projector_cpu_vs_passthrough"),
    "recovery_s": ("recovery", "recovery_s"),  # SIGKILL -> ready again, median of the kills of a run
}

#: Where a SUMMARY key comes from when its own scenario did not run: the HTTP bots, the other
#: client load through the gateway (`summary_sources` says which one each value is).
FALLBACK: dict[str, tuple[str, str]] = {
    "client_moves_per_s": ("http", "moves_per_s"),
    "client_vs_peer": ("http", "vs_peer"),
}


def _quotient(top: float | None, bottom: float | None) -> float | None:
    return None if top is None or not bottom else top / bottom


def derive(summaries: dict) -> None:
    """Add the RATIOS to the scenarios' figures (scenario name -> its summary, as the runner
    makes them), where both sides were measured."""
    for scenario, key, other, other_key, name in RATIOS:
        top = summaries.get(scenario, {}).get("figures", {}).get(key)
        bottom = summaries.get(other, {}).get("figures", {}).get(other_key)
        if top is None or bottom is None or _quotient(top["median"], bottom["median"]) is None:
            continue
        summaries[scenario]["figures"][name] = {
            "median": _quotient(top["median"], bottom["median"]),
            "min": _quotient(top["min"], bottom["max"]),
            "max": _quotient(top["max"], bottom["min"]),
            "runs": None,
        }


def _source(summaries: dict, key: str) -> tuple[str, str] | None:
    """The (scenario, figure) that gives SUMMARY's `key` in these summaries: its own, else its
    FALLBACK, when measured (a median); None when neither is."""
    for source in (SUMMARY[key], FALLBACK.get(key)):
        if source is None:
            continue
        figure = summaries.get(source[0], {}).get("figures", {}).get(source[1])
        if figure is not None and figure["median"] is not None:
            return source
    return None


def summary_of(summaries: dict) -> dict[str, float | None]:
    """The headline numbers: medians of the SUMMARY's figures (after `derive`), None where missing."""
    out: dict[str, float | None] = {}
    for key in SUMMARY:
        source = _source(summaries, key)
        out[key] = None if source is None else summaries[source[0]]["figures"][source[1]]["median"]
    return out


def summary_sources(summaries: dict) -> dict[str, str | None]:
    """`scenario.figure` that each headline number of `summary_of` is (None where it is null)."""
    return {key: None if (source := _source(summaries, key)) is None else ".".join(source) for key in SUMMARY}
