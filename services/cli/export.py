"""`plylog export`: a match's move records (and results) from Kafka as offline log files, the
JSON Lines format `plylog replay --file` folds: one move record per line, the exact bytes
from the topic, in offset order. What goes into a log: `services/cli/_match_logs.py`.

One match is read from its home partition only (`murmur2(match_id) % partitions`); a time
range reads every partition once, keeping in memory the matches of one partition at a time.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import orjson
import typer

from games.timeutil import to_ms
from services.cli._ids import checked_match_id
from services.common.kafka_partition import partition_of
from services.common.receipt_keys import Keyring, load_keyring
from services.common.settings import Settings, Topics, load

from ._errors import CliError
from ._match_logs import MatchLog, PartitionCollector, compare_replay, pair_results
from ._receipt import seal
from ._topic_reader import TopicReader


# --- where the files go ---------------------------------------------------------------------------
def results_path(moves_path: Path) -> Path:
    """`m1.moves.jsonl` -> `m1.results.jsonl`; any other name gets `.results.jsonl` appended to its stem."""
    name = moves_path.name
    stem = name[: -len(".moves.jsonl")] if name.endswith(".moves.jsonl") else moves_path.stem
    return moves_path.with_name(f"{stem}.results.jsonl")


COMBINED = "matches"  # the name of a combined export: matches.moves.jsonl, matches.results.jsonl


class Layout:
    """The files of an export: per match a moves file (and a results file beside it), or one
    combined pair for all; a time range also has an index. `start` empties them."""

    def __init__(self, directory: Path, combined: bool = False, single: Path | None = None):
        self.directory, self.combined, self.single = directory, combined, single

    def moves(self, log: MatchLog) -> Path:
        if self.single is not None:
            return self.single
        return self.directory / f"{COMBINED if self.combined else log.match_id}.moves.jsonl"

    def results(self, log: MatchLog) -> Path:
        return results_path(self.moves(log))

    @property
    def index(self) -> Path | None:
        return None if self.single is not None else self.directory / "index.jsonl"

    def start(self, with_results: bool) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        shared = [self.index] if self.index else []
        if self.combined:
            shared.append(self.directory / f"{COMBINED}.moves.jsonl")
            shared += [self.directory / f"{COMBINED}.results.jsonl"] if with_results else []
        for path in shared:
            path.write_bytes(b"")


def write_lines(path: Path, lines: list[bytes], append: bool) -> None:
    with open(path, "ab" if append else "wb") as out:
        for line in lines:
            out.write(line + b"\n")


# --- time range --------------------------------------------------------------------------------------
def parse_moment(text: str, option: str) -> int:
    """Epoch milliseconds of an RFC 3339 time or a date (midnight UTC); no offset means UTC."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither an RFC 3339 time (2026-11-29T22:00:00Z) nor a date (2026-11-29)", param_hint=option
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


def created_between(since_ms: int | None, until_ms: int | None) -> Callable[[dict], bool]:
    def wanted(view: dict) -> bool:
        created = to_ms(view["created_at"])
        return (since_ms is None or since_ms <= created) and (until_ms is None or created < until_ms)

    return wanted


# --- progress and totals -------------------------------------------------------------------------------
@dataclass
class Totals:
    matches: int = 0
    moves: int = 0
    results: int = 0
    left_out: int = 0
    replayed: int = 0
    receipts: int = 0
    problems: list[str] = field(default_factory=list)


class Progress:
    """A line per partition, and one every few seconds inside a long one (stderr)."""

    def __init__(self, stream: IO[str], every_s: float = 2.0):
        self.stream, self.every_s = stream, every_s
        self.started = self.last = time.monotonic()

    def tick(self, collector: PartitionCollector, of: int, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= self.every_s:
            self.last = now
            self.stream.write(
                f"  partition {collector.partition} ({collector.partition + 1} of {of}): "
                f"{collector.read:,} records read, "
                f"{len(collector.logs)} matches ({now - self.started:.1f}s)\n"
            )
            self.stream.flush()


# --- the export ---------------------------------------------------------------------------------------------
def collect(
    reader: TopicReader, topics: Topics, collector: PartitionCollector, progress: Progress | None, partitions: int
) -> list[MatchLog]:
    for record in reader.records(topics.moves, collector.partition):
        collector.feed(record)
        if progress is not None and collector.read % 5000 == 0:
            progress.tick(collector, partitions)
    if progress is not None:
        progress.tick(collector, partitions, force=True)
    return list(collector.logs.values())


def export_logs(
    reader: TopicReader,
    topics: Topics,
    logs: list[MatchLog],
    layout: Layout,
    with_results: bool,
    check: bool,
    totals: Totals,
    keyring: Callable[[], Keyring] | None = None,
) -> None:
    """Write the logs (and their results) of one partition; append them to the index. With a
    keyring, each match's results file (not a combined one) ends with its signed receipt, when
    its results carry a receipt chain (_receipt.seal)."""
    paired = pair_results(logs, reader.records(topics.results, logs[0].partition)) if with_results and logs else {}
    for log in logs:
        if log.unwritable:
            offset, why = log.unwritable[0]
            totals.problems.append(f"{log.match_id}: not exported: the record at offset {offset} {why}")
            continue
        answers: list[bytes] = []
        if with_results:
            answers, missing = paired[log.match_id].results, paired[log.match_id].missing
            if missing:
                totals.problems.append(
                    f"{log.match_id}: not exported: {len(missing)} of its {len(log.moves)} move records have no result "
                    f"on {topics.results} (offsets {missing[:5]}{' ...' if len(missing) > 5 else ''}): the rules "
                    "worker may be behind, or the results' retention removed them"
                )
                continue
        write_lines(layout.moves(log), [record.value for record in log.moves], append=layout.combined)
        if with_results:
            receipt = None if layout.combined or keyring is None else seal(log.match_id, answers, keyring)
            write_lines(layout.results(log), answers + ([receipt] if receipt else []), append=layout.combined)
            totals.receipts += receipt is not None
        if layout.index is not None:
            write_lines(layout.index, [orjson.dumps(_index_entry(log, layout, with_results))], append=True)
        totals.matches += 1
        totals.moves += len(log.moves)
        totals.results += len(answers)
        totals.left_out += len(log.skipped)
        if check and not layout.combined:
            _check(layout.moves(log), answers, totals)


def _index_entry(log: MatchLog, layout: Layout, with_results: bool) -> dict:
    entry = log.index_entry()
    entry["moves_file"] = layout.moves(log).name
    entry["results_file"] = layout.results(log).name if with_results else None
    return entry


def _check(moves_file: Path, answers: list[bytes], totals: Totals) -> None:
    with open(moves_file, "rb") as lines:
        comparison = compare_replay(lines, str(moves_file), answers)
    totals.replayed += comparison.results
    totals.problems += [f"{moves_file}: {difference}" for difference in comparison.differences[:5]]


def export_match(settings: Settings, match_id: str, out: Path | None, with_results: bool, check: bool) -> Totals:
    topics = settings.topics
    moves_file = out or Path(f"{match_id}.moves.jsonl")
    layout = Layout(moves_file.parent, single=moves_file)
    layout.start(with_results)
    totals = Totals()
    with TopicReader(settings.kafka_bootstrap) as reader:
        partitions = _partition_count(reader, topics, with_results)
        home = partition_of(match_id.encode(), partitions)
        collector = PartitionCollector(home, partitions, wanted=lambda view: True, only=match_id)
        logs = collect(reader, topics, collector, None, partitions)
        if not logs or not logs[0].moves:
            raise CliError(
                f"no move records of {match_id!r} on {topics.moves} partition {home} (its home partition "
                f"of {partitions})",
                "check the match id, PLYLOG_TOPIC_PREFIX and KAFKA_BOOTSTRAP_SERVERS",
            )
        export_logs(reader, topics, logs, layout, with_results, check, totals, _keyring(settings, with_results))
    return totals


def _keyring(settings: Settings, with_results: bool) -> Callable[[], Keyring] | None:
    """The receipt signing keys when results are exported, loaded (made, the first time) only
    when a match to seal comes: exporting legacy matches makes no key."""
    return functools.cache(lambda: load_keyring(settings.receipt_keys_dir)) if with_results else None


def export_range(
    settings: Settings,
    since_ms: int | None,
    until_ms: int | None,
    directory: Path,
    combined: bool,
    with_results: bool,
    check: bool,
    progress: Progress,
) -> Totals:
    topics = settings.topics
    layout = Layout(directory, combined)
    layout.start(with_results)
    totals = Totals()
    keyring = None if combined else _keyring(settings, with_results)
    with TopicReader(settings.kafka_bootstrap) as reader:
        partitions = _partition_count(reader, topics, with_results)
        for partition in range(partitions):
            collector = PartitionCollector(partition, partitions, created_between(since_ms, until_ms))
            logs = collect(reader, topics, collector, progress, partitions)
            export_logs(reader, topics, logs, layout, with_results, check, totals, keyring)
    if check and combined and totals.matches:
        _check_combined(layout, totals)
    return totals


def _check_combined(layout: Layout, totals: Totals) -> None:
    combined = layout.directory / f"{COMBINED}.moves.jsonl"
    answers = results_path(combined).read_bytes().splitlines()
    _check(combined, answers, totals)


def _partition_count(reader: TopicReader, topics: Topics, with_results: bool) -> int:
    partitions = reader.partitions(topics.moves)
    if with_results and reader.partitions(topics.results) != partitions:
        raise CliError(
            f"{topics.results} has {reader.partitions(topics.results)} partitions but {topics.moves} has "
            f"{partitions}; the contract wants the same count",
            "recreate the results topic",
        )
    return partitions


# --- the command ----------------------------------------------------------------------------------------------
def export(
    match: str | None = typer.Option(
        None, "--match", "-m", help="Export this match (read from its home partition).", callback=checked_match_id
    ),
    since: str | None = typer.Option(
        None,
        "--since",
        help="Export every match created at or after this time "
        "(RFC 3339, e.g. 2026-11-29T22:00:00Z, or a date: midnight UTC).",
    ),
    until: str | None = typer.Option(None, "--until", help="... and created before this time (same forms)."),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="--match: the moves file (default MATCH.moves.jsonl); a time range: the directory (required).",
    ),
    results: bool = typer.Option(
        False,
        "--results",
        help="Also write each log's result records from the results "
        "topic, one per move record, in the same order, to NAME.results.jsonl beside it; for a match "
        "with a receipt chain, a last line with its signed receipt (`plylog verify` checks it).",
    ),
    combined: bool = typer.Option(
        False,
        "--combined",
        help="A time range into one matches.moves.jsonl (and "
        "matches.results.jsonl), "
        "partition by partition, instead of one file per match.",
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="Refold each written log as `plylog replay --file` does and "
        "compare with the exported results (needs --results).",
    ),
) -> None:
    """Export match logs from Kafka as JSON Lines files that `plylog replay --file` folds.

    Each line is a move record exactly as its bytes are on the topic, in offset order. With
    `--results`, line n of the results file is the topic's result for line n of the log (a match
    created with a rules version gets one more line, its receipt, signed with the current key of
    receipt-keys.json in PLYLOG_RECEIPT_KEYS_DIR (default PLYLOG_HOME); not in a --combined export), so the
    result `plylog replay --file` gives for line n is the same bytes apart from `source`
    ({file, line} offline, {partition, offset} on the topic); `--check` verifies exactly that.
    A time range also writes index.jsonl: per match its game, created_at, partition, files and the
    records left out (tombstones, unreadable records, records of another match_id). Progress and a
    summary go to stderr.
    """
    if (match is None) == (since is None and until is None):
        raise typer.BadParameter("give --match ID, or a time range with --since and/or --until")
    if check and not results:
        raise typer.BadParameter("--check compares with the exported results: add --results")
    settings = load()
    started = time.monotonic()
    if match is not None:
        if combined:
            raise typer.BadParameter("--combined is for a time range")
        totals = export_match(settings, match, out, results, check)
        where = str(out or Path(f"{match}.moves.jsonl"))
    else:
        if out is None:
            raise typer.BadParameter("a time range needs --out DIRECTORY", param_hint="--out")
        since_ms = None if since is None else parse_moment(since, "--since")
        until_ms = None if until is None else parse_moment(until, "--until")
        typer.echo(
            f"exporting matches created in [{since or '-inf'}, {until or '+inf'}) from "
            f"{settings.topics.moves} to {out}/ ...",
            err=True,
        )
        totals = export_range(settings, since_ms, until_ms, out, combined, results, check, Progress(sys.stderr))
        where = f"{out}/"
    _report(totals, where, check, time.monotonic() - started, settings.topics)


def _report(totals: Totals, where: str, check: bool, elapsed: float, topics: Topics) -> None:
    echo = lambda text: typer.echo(text, err=True)  # noqa: E731 - a one-line alias, used below only
    echo(
        f"exported {totals.matches} matches: {totals.moves} move records, {totals.results} results, to {where} "
        f"in {elapsed:.1f}s; {totals.left_out} records keyed by these matches left out (see --help)"
    )
    if totals.receipts:
        echo(f"signed {totals.receipts} receipts (check one with `plylog verify FILE`)")
    if check:
        echo(
            f"check: {totals.replayed} replayed results compared with {topics.results}, byte for byte apart from source"
        )
    for problem in totals.problems[:20]:
        echo(f"problem: {problem}")
    if totals.problems:
        raise CliError(
            f"{len(totals.problems)} problems (listed above)",
            "see each problem; files of the other matches were written",
        )


def register(app: typer.Typer) -> None:
    app.command("export")(export)
