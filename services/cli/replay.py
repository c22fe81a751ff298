"""`plylog replay`: refold a match log with the rules worker's own fold."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer

from services.cli._ids import checked_match_id
from services.common.log_replay import fold_file, write_steps


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
        if out and sink is not None:
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
