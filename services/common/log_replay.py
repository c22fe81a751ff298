"""Replaying a JSON Lines match log with the rules worker's own fold (`plylog replay --file`, and its
benchmark in bench/replay_bench.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from games.fold import Step, encode, replay_lines
from games.match import render


def fold_file(path: Path, match_id: str | None = None) -> Iterator[Step]:
    """Steps of a JSON Lines log, one per line (all matches; `match_id` filters the output)."""
    with open(path, "rb") as lines:
        for taken in replay_lines(lines, str(path)):
            if match_id is None or taken.result["match_id"] == match_id:
                yield taken


def write_steps(
    steps: Iterable[Step], out: IO[bytes] | None, show: bool, at: int | None, picture: IO[str]
) -> dict[str, int]:
    """Write results (one JSON line each) to `out`; draw positions on `picture`.
    Returns counts for the summary line."""
    counts = {"records": 0, "accepted": 0, "rejected": 0, "duplicates": 0}
    for taken in steps:
        result = taken.result
        counts["records"] += 1
        counts["duplicates" if result["duplicate"] else result["status"]] += 1
        if out is not None:
            out.write(encode(result) + b"\n")
        if taken.changed and taken.state is not None and ((at is None and show) or result["seq"] == at):
            picture.write(render(taken.state) + "\n\n")
    return counts
