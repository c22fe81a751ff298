"""`plylog audit`: refold the moves log and compare it with what the rules worker emitted."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import orjson
import typer

from games.fold import encode
from services.cli._ids import checked_match_id
from services.common.kafka_read import partition_count, read_topic
from services.common.moves_log import refold
from services.common.settings import Settings


@dataclass
class AuditReport:
    moves: int = 0
    results: int = 0
    repeated_results: int = 0
    dead_letters: int = 0
    outcomes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        verdict = "OK" if self.ok else f"{len(self.problems)} PROBLEMS"
        return (
            f"audit {verdict}: {self.moves} move records, {self.results} results "
            f"({self.repeated_results} repeats of identical results), {self.dead_letters} dead letters, "
            f"{self.outcomes} outcomes"
        )


def audit(settings: Settings, match_id: str | None = None, limit: int = 50) -> AuditReport:
    """Refold the moves log and compare with what was emitted: every move record must have its
    result (or dead letter), byte for byte equal to the offline fold, and every finished match
    its outcome. Results are matched to moves by their `source` (partition, offset)."""
    topics = settings.topics
    bootstrap = settings.kafka_bootstrap
    report = AuditReport()

    def problem(text: str) -> None:
        if len(report.problems) < limit:
            report.problems.append(text)
        elif len(report.problems) == limit:
            report.problems.append("… more problems not listed")

    emitted: dict[tuple[int, int], list[bytes]] = defaultdict(list)
    for rec in read_topic(bootstrap, topics.results):
        source = orjson.loads(rec.value).get("source") or {}
        emitted[(source.get("partition"), source.get("offset"))].append(rec.value)
    dead = {
        (orjson.loads(r.value)["partition"], orjson.loads(r.value)["offset"])
        for r in read_topic(bootstrap, topics.deadletter)
    }
    outcomes: dict[str, set[bytes]] = defaultdict(set)
    for rec in read_topic(bootstrap, topics.outcomes):
        outcomes[orjson.loads(rec.value)["match_id"]].add(rec.value)

    expected_outcomes: dict[str, bytes] = {}
    moves = read_topic(bootstrap, topics.moves)
    partitions = partition_count(bootstrap, topics.moves)
    for rec, taken in refold(moves, topic=topics.moves, partitions=partitions, match_id=match_id):
        report.moves += 1
        where = f"{topics.moves}[{rec.partition}]@{rec.offset}"
        if taken is None or (taken.result["match_id"] is None or taken.result["event_id"] is None):
            report.dead_letters += 1
            if (rec.partition, rec.offset) not in dead:
                problem(f"{where}: unusable record has no dead letter")
            continue
        expected = encode(taken.result)
        got = emitted.get((rec.partition, rec.offset), [])
        report.results += len(got)
        report.repeated_results += max(0, len(got) - 1)
        if not got:
            problem(
                f"{where}: no result ({taken.result['match_id']} {taken.result['status']} seq {taken.result['seq']})"
            )
        for value in got:
            if value != expected:
                problem(
                    f"{where}: result differs from the offline fold: {_brief(expected)}; {difference(value, expected)}"
                )
        if taken.outcome is not None:
            expected_outcomes[taken.result["match_id"]] = encode(taken.outcome)
    for match, expected in expected_outcomes.items():
        got_outcomes = outcomes.get(match, set())
        report.outcomes += len(got_outcomes)
        if got_outcomes != {expected}:
            problem(f"outcome of {match}: got {[_brief(v) for v in got_outcomes]}, expected {_brief(expected)}")
    extra = set(outcomes) - set(expected_outcomes)
    if match_id is None and extra:
        problem(f"outcomes for matches the log does not end: {sorted(extra)[:5]}")
    return report


def _brief(value: bytes) -> str:
    data = orjson.loads(value)
    keys = ("match_id", "status", "seq", "duplicate", "reason") if "status" in data else ("match_id", "outcome")
    return orjson.dumps({k: data.get(k) for k in keys}).decode()


def difference(got: bytes, expected: bytes, width: int = 160) -> str:
    """The fields in which two records differ, each as got/expected (values cut to `width`; an
    object such as `view` is named by its own differing fields): the brief fields alone can be
    equal on both sides while the view differs."""
    parts = _differences(orjson.loads(got), orjson.loads(expected), "", width)
    return "; ".join(parts) or "the same fields, encoded differently"


def _differences(left: dict, right: dict, prefix: str, width: int) -> list[str]:
    parts = []
    for key in sorted(set(left) | set(right)):
        a, b = left.get(key), right.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            parts.extend(_differences(a, b, f"{prefix}{key}.", width))
        else:
            parts.append(f"{prefix}{key}: got {_cut(a, width)}, expected {_cut(b, width)}")
    return parts


def _cut(value: object, width: int) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= width else text[:width] + "…"


def audit_command(
    match: str | None = typer.Option(None, "--match", "-m", help="Audit only this match.", callback=checked_match_id),
    all_matches: bool = typer.Option(False, "--all", help="Audit every match in the log (the default)."),
    limit: int = typer.Option(50, help="List at most this many problems."),
) -> None:
    """Refold plylog.moves and compare with what the rules worker emitted.

    Every move record must have its result (or dead letter), byte for byte what the offline fold
    gives, and every finished match its outcome. Exits 1 if anything differs.
    """
    from services.common.settings import load

    if match and all_matches:
        raise typer.BadParameter("give --match ID or --all, not both")
    report = audit(load(), match, limit)
    for problem in report.problems:
        typer.echo(f"  {problem}")
    typer.echo(report.summary())
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
