"""The fold: (match state or None, move record) -> (new state, result record, outcome record).

This is the one function the rules worker, `plylog replay`, the audit, the gateway's
time-travel and the benchmarks all call. It is pure and deterministic: the same records
give the same result bytes, anywhere.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional

import orjson
from pydantic import ValidationError

from schemas.base import EVENT_ID_PATTERN, MATCH_ID_PATTERN, MAX_RECORD_BYTES
from schemas.records import MoveRecord

from .core import Rejected, describe_validation_error, public_event
from .match import MatchState, create_match, execute, view

_EVENT_ID = re.compile(EVENT_ID_PATTERN)
_MATCH_ID = re.compile(MATCH_ID_PATTERN)


@dataclass(frozen=True)
class Unreadable:
    """A record that cannot be folded: what could be salvaged of its ids, and why."""

    code: str
    message: str
    event_id: Optional[str] = None
    match_id: Optional[str] = None
    player: Optional[str] = None
    at: Optional[str] = None

    @property
    def has_ids(self) -> bool:
        """True when the record is a JSON object with a usable match_id and event_id."""
        return self.event_id is not None and self.match_id is not None


@dataclass(frozen=True)
class Step:
    state: Optional[MatchState]
    result: dict[str, Any]
    outcome: Optional[dict[str, Any]] = None
    changed: bool = False  # True when the state differs from the one given


def read(raw: bytes | str, key: bytes | str | None = None) -> MoveRecord | Unreadable:
    """Decode and validate a move record; `key` (the Kafka key) must equal its match_id."""
    if isinstance(raw, str):
        raw = raw.encode()
    if len(raw) <= MAX_RECORD_BYTES:
        try:
            record = MoveRecord.model_validate_json(raw)
        except ValidationError:
            pass  # diagnosed below, where the ids can be salvaged
        else:
            return _check_key(record, key)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return Unreadable("malformed", f"not JSON: {error}")
    if not isinstance(data, dict):
        return Unreadable("malformed", f"not a JSON object but a JSON {type(data).__name__}")
    ids = _salvage_ids(data)
    if len(raw) > MAX_RECORD_BYTES:
        return Unreadable("too_large", f"record is {len(raw)} bytes; the limit is {MAX_RECORD_BYTES}", **ids)
    try:
        record = MoveRecord.model_validate(data)
    except ValidationError as error:
        return Unreadable("malformed", describe_validation_error(error, "move record"), **ids)
    return _check_key(record, key)


def _check_key(record: MoveRecord, key: bytes | str | None) -> MoveRecord | Unreadable:
    if key is None:
        return record
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    if key == record.match_id:
        return record
    problem = "the record has no key" if not key else f"record key {key!r} differs from match_id {record.match_id!r}"
    return Unreadable("malformed", f"{problem}; the key must be the match_id",
                      record.event_id, record.match_id, record.player, record.at)


def _salvage_ids(data: dict[str, Any]) -> dict[str, Optional[str]]:
    def valid(name: str, pattern: Optional[re.Pattern] = None, limit: int = 64) -> Optional[str]:
        value = data.get(name)
        if not isinstance(value, str) or not 0 < len(value) <= limit:
            return None
        return value if pattern is None or pattern.match(value) else None

    return {"event_id": valid("event_id", _EVENT_ID), "match_id": valid("match_id", _MATCH_ID),
            "player": valid("player"), "at": valid("at", limit=40)}


def step(state: Optional[MatchState], record: MoveRecord | Unreadable, source: Optional[dict] = None) -> Step:
    """Fold one record into its match. `state` must be the state of `record.match_id`
    (None if the match does not exist), except for an Unreadable whose key was wrong."""
    if isinstance(record, Unreadable):
        return Step(state, _rejected(record, state, record.code, record.message, source))
    if state is not None and record.event_id in state.event_ids:
        return Step(state, _result(record, "accepted", state.seq, [], view(state), source, duplicate=True))
    current_seq = 0 if state is None else state.seq
    if record.expected_seq is not None and record.expected_seq != current_seq:
        return Step(state, _rejected(record, state, "stale",
                                     f"expected seq {record.expected_seq} but the match is at seq {current_seq}", source))
    try:
        if state is None and record.action.get("type") == "create":
            events, new_state = create_match(record.match_id, record.player, record.action, record.at)
        else:
            events, new_state, _ = execute(state, record.player, record.action, record.at)
    except Rejected as rejection:
        return Step(state, _rejected(record, state, rejection.code, rejection.message, source))
    new_state = new_state.evolved(seq=current_seq + 1, event_ids=new_state.event_ids + (record.event_id,))
    result = _result(record, "accepted", new_state.seq, [public_event(e) for e in events], view(new_state), source)
    ended_now = new_state.status == "over" and (state is None or state.status != "over")
    return Step(new_state, result, outcome_record(new_state) if ended_now else None, changed=True)


def outcome_record(state: MatchState) -> dict[str, Any]:
    return {
        "v": 1, "match_id": state.match_id, "game": state.game, "players": list(state.seats),
        "outcome": state.outcome, "rated": state.rated, "started_at": state.started_at,
        "ended_at": state.ended_at, "seq": state.seq,
    }


def _result(record: MoveRecord | Unreadable, status: str, seq: int, events: list, match_view: Optional[dict],
            source: Optional[dict], duplicate: bool = False) -> dict[str, Any]:
    return {
        "v": 1, "event_id": record.event_id, "match_id": record.match_id, "player": record.player,
        "status": status, "seq": seq, "duplicate": duplicate, "events": events, "view": match_view,
        "at": record.at, "source": source,
    }


def _rejected(record: MoveRecord | Unreadable, state: Optional[MatchState], code: str, message: str,
              source: Optional[dict]) -> dict[str, Any]:
    known = state is not None and state.match_id == record.match_id
    result = _result(record, "rejected", state.seq if known else 0, [], view(state) if known else None, source)
    result["reason"] = {"code": code, "message": message}
    return result


class Replayer:
    """Folds records of many interleaved matches, holding every match's state in memory."""

    def __init__(self) -> None:
        self.states: dict[str, MatchState] = {}

    def feed(self, raw: bytes | str, source: Optional[dict] = None, key: bytes | str | None = None) -> Step:
        record = read(raw, key)
        if isinstance(record, Unreadable) and (record.match_id is None or key is not None):
            return step(None, record, source)
        current = self.states.get(record.match_id)
        result = step(current, record, source)
        if result.changed:
            self.states[record.match_id] = result.state
        return result


def replay_lines(lines: Iterable[bytes], file_name: str) -> Iterator[Step]:
    """Fold a JSON Lines match log, one Step per line (blank lines too: they are malformed)."""
    replayer = Replayer()
    for number, line in enumerate(lines, start=1):
        yield replayer.feed(line.rstrip(b"\r\n"), {"file": file_name, "line": number})


def encode(record: dict[str, Any]) -> bytes:
    """The wire bytes of a result or outcome record."""
    return orjson.dumps(record)
