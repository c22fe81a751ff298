"""Where a move's time goes between its produce and its view: `python -m bench.trace DIR [--label latency]`.

Run a latency scenario with PLYLOG_TRACE_DIR=DIR set (`PLYLOG_TRACE_DIR=DIR plylog bench latency
--runs 1`; the last run is the one traced, its warm-up and earlier runs are left out): the bench
writes when it sent each move and saw its result and view (`bench-<label>.json`), the rules worker
and the projector the stages each move passed (services/common/stage_trace.py). This lines them up
by event id (one clock, CLOCK_MONOTONIC) and prints, for each stage, the time since the stage
before: its p50 and p99 over the moves traced, and its mean over the slowest 1 % (the moves that
make the p99), so the stage that makes the tail stands out.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import orjson

#: the stages a move passes, in order: (stage, who marks it)
PATH = [
    ("sent", "bench: just before the producer's send"),
    ("fetched", "rules worker: its drain hands the move to the fold loop's buffer"),
    ("taken", "rules worker: the fold loop takes its batch"),
    ("folded", "rules worker: the batch is folded"),
    ("produced", "rules worker: its result handed to the producer"),
    ("acked", "rules worker: Kafka acknowledged its result"),
    ("polled", "projector: its poll returned the result"),
    ("applied", "projector: the script that writes its view returned"),
    ("views", "bench: the view's announcement arrived"),
]
#: seen beside the path: (stage, the stage it is measured from, who marks it)
BESIDE = [
    ("results", "produced", "bench: its consumer saw the result on Kafka"),
    ("stored", "acked", "rules worker: its state and position stored"),
]


def load(directory: Path, label: str) -> tuple[dict[str, dict[str, float]], float]:
    """stage -> event id -> when (the first time: a redelivery comes later); and the time the
    measured moves start (after the scenario's warm-up)."""
    bench = orjson.loads((directory / f"bench-{label}.json").read_bytes())
    times: dict[str, dict[str, float]] = {"sent": bench["sent"], **bench["at"]}
    sent = set(bench["sent"])
    # the same load (same event ids) ran before, in a warm-up or an earlier run: only this run's marks
    begun = min(bench["sent"].values(), default=0.0)
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short when the process was stopped
            stage = times.setdefault(entry["stage"], {})
            if entry["t"] < begun:
                continue
            for event in entry["ids"]:
                if event in sent:
                    stage.setdefault(event, entry["t"])
    return times, bench["after"]


def quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def report(times: dict[str, dict[str, float]], after: float) -> str:
    events = [e for e, t in times["sent"].items() if t >= after and e in times.get("views", {})]
    total = {e: times["views"][e] - times["sent"][e] for e in events}
    ranked = sorted(events, key=lambda e: total[e])
    slowest = ranked[-max(1, len(ranked) // 100) :]
    ordered = sorted(total.values())
    lines = [
        f"{len(events)} moves traced: produce -> view p50 {_ms(quantile(ordered, 0.5))} ms, "
        f"p99 {_ms(quantile(ordered, 0.99))} ms; the slowest 1 %: {_ms(_mean([total[e] for e in slowest]))} ms",
        f"{'from -> to':<22} {'p50 ms':>8} {'p99 ms':>8} {'slowest 1 %':>12}  (mean ms)",
    ]
    stages = [stage for stage, _ in PATH if stage in times]
    pairs = list(itertools.pairwise(stages)) + [(b, s) for s, b, _ in BESIDE if s in times and b in times]
    for before, stage in pairs:
        deltas = {e: times[stage][e] - times[before][e] for e in events if e in times[stage] and e in times[before]}
        lines.append(
            f"{before + ' -> ' + stage:<22} {_ms(quantile(sorted(deltas.values()), 0.5)):>8} "
            f"{_ms(quantile(sorted(deltas.values()), 0.99)):>8} "
            f"{_ms(_mean([deltas[e] for e in slowest if e in deltas])):>12}"
        )
    return "\n".join(lines)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.trace", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("directory", type=Path)
    parser.add_argument("--label", default="latency", help="the scenario run traced (its label: latency)")
    args = parser.parse_args()
    print(report(*load(args.directory, args.label)))


if __name__ == "__main__":
    main()
