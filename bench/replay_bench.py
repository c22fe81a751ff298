"""Offline replay throughput: `plylog replay --file` on 1,000 random complete matches per game.

Usage: python -m bench.replay_bench [--matches 1000] [--games strands,mana] [--runs 3]
Prints one JSON object: per game, records, matches, and records/s (median, min, max of the runs;
JSON decoding and result encoding included, single process = one core).
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

from games.registry import GAME_MODULES
from services.common.log_replay import fold_file, write_steps

from .logs import write_random_log


def replay_rate(path: Path) -> tuple[int, float]:
    started = time.perf_counter()
    counts = write_steps(fold_file(path), io.BytesIO(), show=False, at=None, picture=io.StringIO())
    return counts["records"], counts["records"] / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matches", type=int, default=1000)
    parser.add_argument("--games", default=",".join(GAME_MODULES))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        for game in args.games.split(","):
            path = Path(tmp) / f"{game}.jsonl"
            made = time.perf_counter()
            records = write_random_log(path, game, args.matches)
            rates = [replay_rate(path)[1] for _ in range(args.runs)]
            report[game] = {
                "matches": args.matches,
                "records": records,
                "generate_s": round(time.perf_counter() - made - 0, 2),
                "records_per_s": {
                    "median": round(statistics.median(rates)),
                    "min": round(min(rates)),
                    "max": round(max(rates)),
                },
            }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
