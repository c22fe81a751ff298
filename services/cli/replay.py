"""`plylog replay`: refold a match log with the rules worker's own fold."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import typer

from games.fold import Step, encode, replay_lines
from games.match import render
from services.cli._ids import checked_match_id


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
        if taken.changed and ((at is None and show) or result["seq"] == at):
            picture.write(render(taken.state) + "\n\n")
    return counts


def replay(
    file: Path | None = typer.Option(
        None,
        "--file",
        "-f",
        exists=True,
        dir_okay=False,
        help="A JSON Lines match log: one move record per line, in order.",
    ),
    match: str | None = typer.Option(
        None,
        "--match",
        "-m",
        help="Only this match. Without --file, reads it from the plylog.moves topic.",
        callback=checked_match_id,
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Write result records here (default: stdout, unless --show/--at)."
    ),
    at: int | None = typer.Option(None, "--at", help="Draw each match as it was at this seq."),
    show: bool = typer.Option(False, "--show", help="Draw the board after every accepted move."),
) -> None:
    """Fold a match log with the rules worker's own code and print one result per record.

    Lines that are not usable records give `malformed` (or `too_large`) results, never an error.
    A summary goes to stderr.
    """
    started = time.perf_counter()
    if file is not None:
        steps = fold_file(file, match)
    elif match is not None:
        from services.common.moves_log import fold_match_from_topic  # needs Kafka; imported only here

        steps = fold_match_from_topic(match)
    else:
        raise typer.BadParameter("give --file LOG.jsonl, or --match ID to read a match from Kafka")
    drawing = show or at is not None
    sink = open(out, "wb") if out else (None if drawing else sys.stdout.buffer)  # noqa: SIM115 - closed below
    try:
        counts = write_steps(steps, sink, show, at, sys.stdout)
    finally:
        if out:
            sink.close()
        elif sink is not None:
            sink.flush()
    elapsed = time.perf_counter() - started
    rate = counts["records"] / elapsed if elapsed else 0.0
    typer.echo(
        f"{counts['records']} records: {counts['accepted']} accepted, {counts['rejected']} rejected, "
        f"{counts['duplicates']} duplicates in {elapsed:.2f}s ({rate:,.0f} records/s)",
        err=True,
    )


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
