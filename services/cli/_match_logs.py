"""Which records of the moves topic make a match's offline log, and which results answer them
(the pure part of `plylog export`: no Kafka here, records in, match logs out).

A match's log is what the rules worker folds into that match: the records keyed by its id on
its home partition whose value is a readable record of that id. Left out, with the reason:
tombstones and records without usable ids (the worker dead-letters them), records whose
match_id differs from their key (answered as the other id's, `malformed`), and records keyed
by the id on another partition (not read: they are rejected `malformed` there). A record with a
line break cannot be one line of a JSON Lines file: its match cannot be exported faithfully.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import orjson

from games.fold import Unreadable, encode, read, replay_lines, step
from schemas.upcast import upcast
from services.common.kafka_partition import partition_of
from services.common.kafka_read import Record


@dataclass
class MatchLog:
    match_id: str
    partition: int
    game: str | None = None
    created_at: str | None = None
    rules: str | None = None  # the rules version it is folded by (`<game>/1` when its create named none)
    moves: list[Record] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (offset, why)
    unwritable: list[tuple[int, str]] = field(default_factory=list)

    def index_entry(self) -> dict:
        return {
            "match_id": self.match_id,
            "game": self.game,
            "rules": self.rules,
            "created_at": self.created_at,
            "partition": self.partition,
            "records": len(self.moves),
            "skipped": [{"offset": offset, "why": why} for offset, why in self.skipped],
        }


def why_left_out(record: Record, match_id: str) -> str | None:
    """Why a record keyed by `match_id` is not a line of the match's log (None: it is)."""
    if record.value is None:
        return "a tombstone (no value): dead-lettered"
    parsed = read(record.value, record.key)
    if isinstance(parsed, Unreadable) and not parsed.has_ids:
        return f"no usable match_id and event_id: dead-lettered ({parsed.message[:80]})"
    if parsed.match_id != match_id:
        return f"its match_id is {parsed.match_id!r}: answered as that match's record (malformed)"
    return None


def cannot_be_a_line(record: Record) -> str | None:
    if b"\n" in record.value or b"\r" in record.value:
        return "holds a line break, so it cannot be one line of a JSON Lines log"
    return None


def accepted_create(record: Record) -> dict | None:
    """The result of `record` if it is a create the fold accepts for a match not yet created."""
    if record.value is None or b'"create"' not in record.value:
        return None
    parsed = read(record.value, record.key)
    if isinstance(parsed, Unreadable) or parsed.action.get("type") != "create":
        return None
    result = step(None, parsed).result
    return result if result["status"] == "accepted" else None


def rules_of(created: dict) -> str:
    """The rules version of a match from its create's result, read in the current form
    (schemas/upcast.py: a `match_created` without `rules` is `<game>/1`)."""
    return str(upcast("match_created", created["events"][0])["rules"])


class PartitionCollector:
    """Collects, from one partition's records in offset order, the logs of the matches `wanted`
    selects by their created view (`wanted(view) -> bool`), or of one match id whatever it holds."""

    def __init__(self, partition: int, partitions: int, wanted: Callable[[dict], bool], only: str | None = None):
        self.partition = partition
        self.partitions = partitions
        self.wanted = wanted
        self.only = only.encode() if only is not None else None
        self.logs: dict[bytes, MatchLog] = {}
        self.pending: dict[bytes, list[Record]] = {}  # keys seen before their create
        self.passed_over: set[bytes] = set()  # created, not wanted
        self.read = 0

    def feed(self, record: Record) -> None:
        self.read += 1
        key = record.key
        if not key or key in self.passed_over or (self.only is not None and key != self.only):
            return
        if key in self.logs:
            self._add(self.logs[key], record)
        elif self.only is not None:
            self.logs[key] = self._add(MatchLog(key.decode("utf-8", "replace"), self.partition), record)
        elif partition_of(key, self.partitions) == self.partition:
            self._before_or_at_create(key, record)

    def _before_or_at_create(self, key: bytes, record: Record) -> None:
        created = accepted_create(record)
        if created is None:
            self.pending.setdefault(key, []).append(record)
            return
        earlier = self.pending.pop(key, [])
        view = created["view"]
        if not self.wanted(view):
            self.passed_over.add(key)
            return
        log = MatchLog(view["match_id"], self.partition, view["game"], view["created_at"], rules_of(created))
        for seen in (*earlier, record):
            self._add(log, seen)
        self.logs[key] = log

    def _created(self, log: MatchLog, record: Record) -> None:
        if log.created_at is None and (created := accepted_create(record)) is not None:
            log.game, log.created_at = created["view"]["game"], created["view"]["created_at"]
            log.rules = rules_of(created)

    def _add(self, log: MatchLog, record: Record) -> MatchLog:
        why = why_left_out(record, log.match_id)
        if why is not None:
            log.skipped.append((record.offset, why))
        elif (unwritable := cannot_be_a_line(record)) is not None:
            log.unwritable.append((record.offset, unwritable))
        else:
            log.moves.append(record)
            if self.only is not None:
                self._created(log, record)
        return log


@dataclass
class Answers:
    """The topic's result for each record of a log, in the log's order, and the offsets of the
    records that have none (yet)."""

    results: list[bytes]
    missing: list[int]


def pair_results(logs: list[MatchLog], results: Iterable[Record]) -> dict[str, Answers]:
    """Pair the records of the logs of one partition with their results, in one pass over the
    results partition: by key and `source`, keeping the first copy (a redelivered result is the
    same bytes). Results of records not in a log (another match_id's, misrouted) are ignored."""
    partition = {log.partition for log in logs}
    wanted = {log.match_id.encode(): {record.offset for record in log.moves} for log in logs}
    found: dict[bytes, dict[int, bytes]] = {key: {} for key in wanted}
    for result in results:
        offsets = wanted.get(result.key)
        if offsets is None or result.value is None:
            continue
        source = orjson.loads(result.value).get("source") or {}
        offset = source.get("offset")
        if source.get("partition") in partition and offset in offsets and offset not in found[result.key]:
            found[result.key][offset] = result.value
    answers = {}
    for log in logs:
        got = found[log.match_id.encode()]
        answers[log.match_id] = Answers(
            [got[r.offset] for r in log.moves if r.offset in got], [r.offset for r in log.moves if r.offset not in got]
        )
    return answers


@dataclass
class Comparison:
    results: int = 0
    differences: list[str] = field(default_factory=list)


def compare_replay(moves_lines: Iterable[bytes], file_name: str, topic_results: list[bytes]) -> Comparison:
    """Fold a log as `plylog replay --file` does and compare each result with the topic's, line by
    line: with its `source` ({file, line}) replaced by the topic result's ({partition, offset}),
    the offline result must be the same bytes."""
    comparison = Comparison()
    steps = list(replay_lines(moves_lines, file_name))
    if len(steps) != len(topic_results):
        comparison.differences.append(f"{len(steps)} replayed results but {len(topic_results)} on the topic")
    for line, (taken, online) in enumerate(zip(steps, topic_results, strict=False), start=1):
        comparison.results += 1
        offline = taken.result
        if offline["source"] != {"file": file_name, "line": line}:
            comparison.differences.append(f"line {line}: offline source is {offline['source']}")
        replaced = encode({**offline, "source": orjson.loads(online)["source"]})
        if replaced != online:
            comparison.differences.append(
                f"line {line}: replayed {replaced[:200]!r} but the topic has {online[:200]!r}"
            )
    return comparison
