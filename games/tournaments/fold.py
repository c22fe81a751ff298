"""The tournament fold: (state or None, record bytes) -> (new state, result record), like the match
fold (games.fold): one result per record, a retry of a recent record answered `duplicate`, bad
input rejected with a reason code, never an exception. Pure: the same records give the same
result bytes and the same state, anywhere (the service, a replay of the log, an audit)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from schemas.base import MAX_RECORD_BYTES
from schemas.tournament import TournamentRecord

from ..core import Rejected, describe_validation_error
from ..fold import DIGEST_CHARS, ID_MEMORY, id_digest, remembered_at
from .decider import decide
from .evolve import Event, evolve
from .state import TournamentState


@dataclass(frozen=True)
class Unreadable:
    code: str
    message: str
    ids: dict[str, Any]


@dataclass(frozen=True)
class Step:
    state: TournamentState | None
    result: dict[str, Any]
    changed: bool = False


def read(raw: bytes | str, key: bytes | str | None = None) -> TournamentRecord | Unreadable:
    """Decode and validate a tournament record; `key` (the Kafka key), when given, must be its id."""
    if isinstance(raw, str):
        raw = raw.encode()
    if isinstance(key, bytes):
        key = key.decode("utf-8", "replace")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return Unreadable("malformed", f"not JSON: {error}", {})
    if not isinstance(data, dict):
        return Unreadable("malformed", f"not a JSON object but a JSON {type(data).__name__}", {})
    ids = {name: _short(data.get(name)) for name in _IDS}
    if len(raw) > MAX_RECORD_BYTES:
        return Unreadable("too_large", f"record is {len(raw)} bytes; the limit is {MAX_RECORD_BYTES}", ids)
    try:
        record = TournamentRecord.model_validate(data)
    except ValidationError as error:
        return Unreadable("malformed", describe_validation_error(error, "tournament record"), ids)
    if key is not None and key != record.tournament_id:
        return Unreadable("malformed", f"the record's key must be its tournament_id {record.tournament_id!r}", ids)
    return record


_IDS = ("event_id", "tournament_id", "actor", "at")


def _short(value: Any) -> str | None:
    """An id salvaged from an unreadable record, if it is a string short enough to quote."""
    return value if isinstance(value, str) and 0 < len(value) <= 64 else None


def step(
    state: TournamentState | None, record: TournamentRecord | Unreadable, source: dict[str, Any] | None = None
) -> Step:
    """Fold one record into its tournament (`state`: the record's tournament, None if none yet)."""
    if isinstance(record, Unreadable):
        return Step(state, _result(record.ids, "rejected", _seq(state), [], source, (record.code, record.message)))
    ids = {"event_id": record.event_id, "tournament_id": record.tournament_id, "actor": record.actor, "at": record.at}
    digest = id_digest(record.actor, record.event_id)
    if state is not None and (remembered := remembered_at(state.recent_ids, digest)) is not None:
        first_seq = state.seq - len(state.recent_ids) // DIGEST_CHARS + 1 + remembered
        return Step(state, _result(ids, "accepted", first_seq, [], source, duplicate=True))
    try:
        events = decide(state, record)
    except Rejected as rejection:
        return Step(state, _result(ids, "rejected", _seq(state), [], source, (rejection.code, rejection.message)))
    for event in events:
        state = evolve(state, event)
    assert state is not None, "a record accepted without a tournament is its create, which makes it"
    recent = (state.recent_ids + digest)[-ID_MEMORY * DIGEST_CHARS :]
    state = state.evolved(seq=state.seq + 1, recent_ids=recent)
    return Step(state, _result(ids, "accepted", state.seq, events, source), changed=True)


def replay(lines: list[bytes | str]) -> tuple[TournamentState | None, list[dict[str, Any]]]:
    """Fold one tournament's records in order: (final state, result records)."""
    state, results = None, []
    for line in lines:
        taken = step(state, read(line))
        state = taken.state
        results.append(taken.result)
    return state, results


def _seq(state: TournamentState | None) -> int:
    return 0 if state is None else state.seq


def _result(
    ids: dict[str, Any],
    status: str,
    seq: int,
    events: list[Event],
    source: dict[str, Any] | None,
    reason: tuple[str, str] | None = None,
    duplicate: bool = False,
) -> dict[str, Any]:
    result = {"v": 1, **{name: ids.get(name) for name in _IDS}, "status": status, "seq": seq}
    result.update(duplicate=duplicate, events=events, source=source)
    if reason is not None:
        result["reason"] = {"code": reason[0], "message": reason[1]}
    return result


def encode(result: dict[str, Any]) -> bytes:
    return orjson.dumps(result)
