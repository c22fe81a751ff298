"""The figures the summary and the README show, with their units and the issue's goals.

Goals are compared with, never asserted: a missed goal is reported, not a failure.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Optional

from .loadgen import GAMES


@dataclass(frozen=True)
class Goal:
    op: str  # ">=" or "<="
    value: float

    def met(self, measured: Optional[float]) -> Optional[bool]:
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
    goal: Optional[Goal] = None
    digits: int = 0

    def title(self, params: dict) -> str:
        return self.label.format(**params)

    def format(self, value: Optional[float]) -> str:
        return "—" if value is None else _number(value, self.digits)


def _number(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


FIGURES: list[Figure] = [
    Figure("baseline", "records_per_s", "raw Kafka pass-through", "records/s"),
    Figure("baseline", "cpu_us_per_record", "pass-through CPU per record", "µs", digits=1),
    Figure("pipeline", "moves_per_s", "pipeline: moves applied in Redis", "moves/s", Goal(">=", 5000)),
    Figure("pipeline", "ratio_to_baseline", "pipeline / baseline", "", Goal(">=", 0.5), digits=2),
    Figure("pipeline", "rules_moves_per_s", "rules worker only: results on Kafka", "moves/s"),
    Figure("pipeline", "rules_cpu_us_per_move", "rules worker CPU per move", "µs"),
    Figure("pipeline", "projector_cpu_us_per_result", "projector CPU per result", "µs"),
    Figure("latency", "p50_ms", "latency p50 at {latency_rate:,.0f} moves/s, produce → view in Redis", "ms", digits=1),
    Figure("latency", "p95_ms", "latency p95", "ms", digits=1),
    Figure("latency", "p99_ms", "latency p99", "ms", Goal("<=", 50), digits=1),
    Figure("latency", "max_ms", "latency max", "ms", digits=1),
    Figure("latency", "results_p99_ms", "latency p99, produce → result on Kafka", "ms", digits=1),
    Figure("latency", "achieved_per_s", "offered rate held", "moves/s"),
    *[Figure("replay", f"{game}_records_per_s", f"offline replay {game}", "records/s", Goal(">=", 20_000))
      for game in GAMES],
    Figure("replay", "rebuild_results_per_s", "plylog rebuild", "results/s", Goal(">=", 20_000)),
    Figure("scale", "workers_1_moves_per_s", "1 rules worker", "moves/s"),
    Figure("scale", "workers_2_moves_per_s", "2 rules workers", "moves/s"),
    Figure("scale", "workers_3_moves_per_s", "3 rules workers", "moves/s"),
    Figure("scale", "speedup", "speed-up 2 vs 1 workers", "×", digits=2),
    Figure("scale", "speedup_3", "speed-up 3 vs 1 workers", "×", digits=2),
    Figure("scale", "workers_1_cpu_us_per_move", "rules CPU per move, 1 worker", "µs"),
    Figure("scale", "workers_2_cpu_us_per_move", "rules CPU per move, 2 workers (all added up)", "µs"),
    Figure("scale", "workers_3_cpu_us_per_move", "rules CPU per move, 3 workers (all added up)", "µs"),
    Figure("memory", "rules_rss_mib", "rules worker RSS, {memory_matches:,} active matches", "MiB", Goal("<=", 500)),
    Figure("memory", "projector_rss_mib", "projector RSS, {memory_matches:,} active matches", "MiB"),
    Figure("http", "moves_per_s", "HTTP moves through the gateway, {http_bots} bots", "moves/s"),
    Figure("http", "p50_ms", "HTTP move p50 (request → applied result)", "ms", digits=1),
    Figure("http", "p99_ms", "HTTP move p99", "ms", digits=1),
    Figure("http", "gateway_cpu_us_per_move", "gateway CPU per HTTP move", "µs"),
]
