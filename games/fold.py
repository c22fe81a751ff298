"""The fold: (match state or None, move record) -> (new state, result record, outcome record).

This is the one function the rules worker, `plylog replay`, the audit, the gateway's
time-travel and the benchmarks all call. It is pure and deterministic: the same records
give the same result bytes, anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from schemas.base import EVENT_ID_PATTERN, MATCH_ID_PATTERN, MAX_RECORD_BYTES
from schemas.records import MoveRecord

from .core import Rejected, describe_validation_error, public_event
from .match import MatchState, create_match, execute, view
from .receipts import GENESIS, next_link

_EVENT_ID = re.compile(EVENT_ID_PATTERN)
_MATCH_ID = re.compile(MATCH_ID_PATTERN)

#: How many of a match's latest accepted submissions are remembered to answer a retry `duplicate`.
#: Older retries are decided again (`expected_seq` makes that safe for any client).
ID_MEMORY = 128

#: A finished match is forgotten once its partition of the moves log holds this many records after
#: the one that ended it: a record beyond that is folded as if the match never existed (the rules
#: worker deletes the state, so its table and its recovery hold active matches, not history).
#: Until then a late record gets what any finished match answers (`match_over`, a retry its
#: `duplicate`). A rule of the log's offsets, not of a clock, so every refold of the log (audit,
#: time travel) answers such a record exactly as the worker did; a match log file has no offsets
#: and forgets nothing.
FORGET_FINISHED_AFTER = 10_000


def forgotten(state: MatchState | None, ended_offset: int | None, offset: int | None) -> bool:
    """Whether a record at `offset` finds the finished match whose last change (its end) was the
    record at `ended_offset` of the same partition already forgotten."""
    return (
        state is not None
        and state.status == "over"
        and ended_offset is not None
        and offset is not None
        and offset - ended_offset > FORGET_FINISHED_AFTER
    )


#: Characters of an `id_digest` (base64 of 9 bytes, no padding): a state's `recent_ids` is its digests joined.
DIGEST_CHARS = 12


def id_digest(player: str, event_id: str) -> str:
    """A short name of one player's submission. The same event id from another player is another
    submission, so nobody can pre-empt an id someone else will use (the timekeeper's, a bot's)."""
    text = f"{len(player)}:{player}{event_id}".encode()
    return base64.b64encode(hashlib.blake2b(text, digest_size=9).digest()).decode()


def remembered_at(recent_ids: str, digest: str) -> int | None:
    """The place (0 = oldest) of `digest` among the joined `recent_ids`, or None. Only a match at a
    digest's boundary counts: one across two neighbours is not a submission."""
    at = recent_ids.find(digest)
    while at > 0 and at % DIGEST_CHARS:
        at = recent_ids.find(digest, at + 1)
    return None if at < 0 else at // DIGEST_CHARS


@dataclass(frozen=True)
class Placement:
    """Where a Kafka record was read, and the home partition of its key (the caller computes it
    with Kafka's default partitioner; `games` knows no Kafka)."""

    topic: str
    partition: int
    home: int


@dataclass(frozen=True)
class Unreadable:
    """A record that cannot be folded: what could be salvaged of its ids, and why. `of_match`:
    the record is in its match's log (key and partition agree), so its rejection shows the match."""

    code: str
    message: str
    event_id: str | None = None
    match_id: str | None = None
    player: str | None = None
    at: str | None = None
    of_match: bool = False

    @property
    def has_ids(self) -> bool:
        """True when the record is a JSON object with a usable match_id and event_id."""
        return self.event_id is not None and self.match_id is not None


@dataclass(frozen=True)
class Step:
    state: MatchState | None
    result: dict[str, Any]
    outcome: dict[str, Any] | None = None
    changed: bool = False  # True when the state differs from the one given


def read(
    raw: bytes | str, key: bytes | str | None = None, placement: Placement | None = None
) -> MoveRecord | Unreadable:
    """Decode and validate a move record; `key` (the Kafka key) must equal its match_id, and a
    record read from Kafka (`placement`) must be on its key's home partition."""
    if isinstance(raw, str):
        raw = raw.encode()
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    if len(raw) <= MAX_RECORD_BYTES:
        try:
            record = MoveRecord.model_validate_json(raw)
        except ValidationError:
            pass  # diagnosed below, where the ids can be salvaged
        else:
            return _check_place(record, key, placement)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return Unreadable("malformed", f"not JSON: {error}")
    if not isinstance(data, dict):
        return Unreadable("malformed", f"not a JSON object but a JSON {type(data).__name__}")
    ids = _salvage_ids(data)
    of_match = ids["match_id"] is not None and _misplaced(ids["match_id"], key, placement) is None
    if len(raw) > MAX_RECORD_BYTES:
        return Unreadable(
            "too_large", f"record is {len(raw)} bytes; the limit is {MAX_RECORD_BYTES}", of_match=of_match, **ids
        )
    try:
        record = MoveRecord.model_validate(data)
    except ValidationError as error:
        return Unreadable("malformed", describe_validation_error(error, "move record"), of_match=of_match, **ids)
    return _check_place(record, key, placement)


def _check_place(record: MoveRecord, key: str | None, placement: Placement | None) -> MoveRecord | Unreadable:
    problem = _misplaced(record.match_id, key, placement)
    if problem is None:
        return record
    return Unreadable("malformed", problem, record.event_id, record.match_id, record.player, record.at)


#: Characters of a record's key a rejection quotes: a key may be as large as Kafka lets a record
#: be, and a result quoting all of it was over the producer's request size.
QUOTED_KEY_CHARS = 100


def _quoted(key: str) -> str:
    if len(key) <= QUOTED_KEY_CHARS:
        return repr(key)
    return f"{key[:QUOTED_KEY_CHARS]!r}… ({len(key)} characters)"


def _misplaced(match_id: str, key: str | None, placement: Placement | None) -> str | None:
    """Why a record of `match_id` with this key and place is not in its match's log (None: it is)."""
    if key is not None and key != match_id:
        problem = (
            "the record has no key" if not key else f"record key {_quoted(key)} differs from match_id {match_id!r}"
        )
        return f"{problem}; the key must be the match_id"
    if placement is not None and placement.partition != placement.home:
        return (
            f"the record is on partition {placement.partition} of {placement.topic}, but match {match_id!r} "
            f"lives on partition {placement.home} (murmur2 of the key modulo the partition count, as Kafka's "
            "Java client partitions); produce with that partitioner: librdkafka clients (kcat, confluent-kafka, "
            "Go, .NET) must set partitioner=murmur2_random"
        )
    return None


def match_of(record: MoveRecord | Unreadable) -> str | None:
    """The match whose state a record is folded against: its own, unless the record cannot be
    told to belong to that match's log (unreadable ids, a wrong key or partition). The rules
    worker and every refold (replay, audit, time travel) decide this here, so they agree."""
    if isinstance(record, Unreadable):
        return record.match_id if record.of_match else None
    return record.match_id


def _salvage_ids(data: dict[str, Any]) -> dict[str, str | None]:
    def valid(name: str, pattern: re.Pattern[str] | None = None, limit: int = 64) -> str | None:
        value = data.get(name)
        if not isinstance(value, str) or not 0 < len(value) <= limit:
            return None
        return value if pattern is None or pattern.match(value) else None

    return {
        "event_id": valid("event_id", _EVENT_ID),
        "match_id": valid("match_id", _MATCH_ID),
        "player": valid("player"),
        "at": valid("at", limit=40),
    }


def step(state: MatchState | None, record: MoveRecord | Unreadable, source: dict[str, Any] | None = None) -> Step:
    """Fold one record into its match. `state` must be the state of `match_of(record)` (None when
    that is None or the match does not exist)."""
    if isinstance(record, Unreadable):
        return Step(state, _rejected(record, state, record.code, record.message, source))
    submission = id_digest(record.player, record.event_id)
    remembered = remembered_at(state.recent_ids, submission) if state is not None else None
    if remembered is not None and state is not None:
        first_seq = state.seq - len(state.recent_ids) // DIGEST_CHARS + 1 + remembered
        return Step(state, _result(record, "accepted", first_seq, [], view(state), source, duplicate=True))
    current_seq = 0 if state is None else state.seq
    if record.expected_seq is not None and record.expected_seq != current_seq:
        return Step(
            state,
            _rejected(
                record,
                state,
                "stale",
                f"expected seq {record.expected_seq} but the match is at seq {current_seq}",
                source,
            ),
        )
    try:
        if state is None and record.action.get("type") == "create":
            events, new_state = create_match(record.match_id, record.player, record.action, record.at)
        else:
            events, new_state, _ = execute(state, record.player, record.action, record.at)
    except Rejected as rejection:
        return Step(state, _rejected(record, state, rejection.code, rejection.message, source))
    recent_ids = ((state.recent_ids if state is not None else "") + submission)[-ID_MEMORY * DIGEST_CHARS :]
    new_state = new_state.evolved(seq=current_seq + 1, recent_ids=recent_ids)
    result = _result(record, "accepted", new_state.seq, [public_event(e) for e in events], view(new_state), source)
    if new_state.rules_stated:  # the receipt chain: only matches whose create stated their rules
        link = next_link(new_state.chain or GENESIS(new_state.match_id), result)
        result["chain"] = link
        new_state = new_state.evolved(chain=link)
    ended_now = new_state.status == "over" and (state is None or state.status != "over")
    return Step(new_state, result, outcome_record(new_state) if ended_now else None, changed=True)


def outcome_record(state: MatchState) -> dict[str, Any]:
    return {
        "v": 1,
        "match_id": state.match_id,
        "game": state.game,
        "players": list(state.seats),
        "outcome": state.outcome,
        "rated": state.rated,
        "started_at": state.started_at,
        "ended_at": state.ended_at,
        "seq": state.seq,
    }


def _result(
    record: MoveRecord | Unreadable,
    status: str,
    seq: int,
    events: list[dict[str, Any]],
    match_view: dict[str, Any] | None,
    source: dict[str, Any] | None,
    duplicate: bool = False,
) -> dict[str, Any]:
    return {
        "v": 1,
        "event_id": record.event_id,
        "match_id": record.match_id,
        "player": record.player,
        "status": status,
        "seq": seq,
        "duplicate": duplicate,
        "events": events,
        "view": match_view,
        "at": record.at,
        "source": source,
    }


def _rejected(
    record: MoveRecord | Unreadable, state: MatchState | None, code: str, message: str, source: dict[str, Any] | None
) -> dict[str, Any]:
    known = state if state is not None and state.match_id == record.match_id else None
    result = _result(record, "rejected", known.seq if known else 0, [], view(known) if known else None, source)
    result["reason"] = {"code": code, "message": message}
    return result


class Replayer:
    """Folds records of many interleaved matches, holding every match's state in memory."""

    def __init__(self) -> None:
        self.states: dict[str, MatchState] = {}
        self.changed_at: dict[str, int] = {}  # match -> log offset of the record that last changed it

    def feed(
        self,
        raw: bytes | str,
        source: dict[str, Any] | None = None,
        key: bytes | str | None = None,
        placement: Placement | None = None,
    ) -> Step:
        record = read(raw, key, placement)
        match = match_of(record)
        offset = (source or {}).get("offset")
        state = self.states.get(match) if match is not None else None
        if match is not None and forgotten(state, self.changed_at.get(match), offset):
            del self.states[match], self.changed_at[match]
            state = None
        result = step(state, record, source)
        if result.changed and match is not None and result.state is not None:
            self.states[match] = result.state
            if offset is not None:
                self.changed_at[match] = offset
        return result


def replay_lines(lines: Iterable[bytes], file_name: str) -> Iterator[Step]:
    """Fold a JSON Lines match log, one Step per line (blank lines too: they are malformed)."""
    replayer = Replayer()
    for number, line in enumerate(lines, start=1):
        yield replayer.feed(line.rstrip(b"\r\n"), {"file": file_name, "line": number})


def encode(record: dict[str, Any]) -> bytes:
    """The wire bytes of a result or outcome record."""
    return orjson.dumps(record)
