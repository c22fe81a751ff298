"""The lobby's fold: (lobby, lobby record bytes) -> (new lobby, result record, create move records).

What the matchmaker service will run on each record of the lobby topic, and what a replay of that
topic runs: pure and deterministic, so the same records give the same results byte for byte. A
retry of an accepted submission (same player and event id, among the latest ID_MEMORY) is answered
`duplicate` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import ValidationError

from schemas.base import MAX_RECORD_BYTES
from schemas.matchmaking import MATCHMAKER, LobbyRecord

from ..core import Event, Rejected, describe_validation_error
from ..timeutil import to_ms
from . import rules
from .decide import apply, decide
from .state import Lobby


@dataclass(frozen=True)
class Unreadable:
    """A record that cannot be decided, with what could be salvaged of its ids."""

    code: str
    message: str
    event_id: str | None = None
    player: str | None = None
    at: str | None = None


@dataclass(frozen=True)
class LobbyStep:
    lobby: Lobby
    result: dict[str, Any]
    creates: list[dict[str, Any]] = field(default_factory=list)  # move records, one per match made
    changed: bool = False


def read(raw: bytes | str) -> LobbyRecord | Unreadable:
    """Decode and validate a lobby record."""
    if isinstance(raw, str):
        raw = raw.encode()
    if len(raw) > MAX_RECORD_BYTES:
        return Unreadable("too_large", f"record is {len(raw)} bytes; the limit is {MAX_RECORD_BYTES}")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return Unreadable("malformed", f"not JSON: {error}")
    if not isinstance(data, dict):
        return Unreadable("malformed", f"not a JSON object but a JSON {type(data).__name__}")
    try:
        return LobbyRecord.model_validate(data)
    except ValidationError as error:
        ids = {name: data.get(name) if isinstance(data.get(name), str) else None for name in ("event_id", "player")}
        at = data.get("at") if isinstance(data.get("at"), str) else None
        ids = {name: value if value is None or len(value) <= 64 else None for name, value in ids.items()}
        return Unreadable("malformed", describe_validation_error(error, "lobby record"), at=at, **ids)


def step(lobby: Lobby, record: LobbyRecord | Unreadable, source: dict[str, Any] | None = None) -> LobbyStep:
    """Fold one record into the lobby."""
    if isinstance(record, Unreadable):
        return LobbyStep(lobby, _result(record, "rejected", [], source, reason=(record.code, record.message)))
    submission = rules.submission(record.player, record.event_id)
    if submission in lobby.recent_ids:
        return LobbyStep(lobby, _result(record, "accepted", [], source, duplicate=True))
    decided = decide(lobby, record)
    if isinstance(decided, Rejected):
        return LobbyStep(lobby, _result(record, "rejected", [], source, reason=(decided.code, decided.message)))
    recent = (*lobby.recent_ids, submission)[-rules.ID_MEMORY :]
    after = apply(lobby, decided).evolved(now_ms=max(lobby.now_ms, to_ms(record.at)), recent_ids=recent)
    creates = [create_record(event) for event in decided if event["type"] == "match_made"]
    return LobbyStep(after, _result(record, "accepted", decided, source), creates, changed=True)


def create_record(made: dict[str, Any]) -> dict[str, Any]:
    """The move record that creates the match of a `match_made` event: its id and event id come from
    the pairing and its `at` from the event, so writing it twice creates one match (the rules answer
    the second `duplicate`)."""
    action: dict[str, Any] = {
        "type": "create",
        "game": made["game"],
        "seats": made["seats"],
        "options": made["options"],
    }
    if made["clock"] is not None:
        action["clock"] = made["clock"]
    if "rules" in made:  # the version the seek or entries stated: a legacy pairing's create states none
        action["rules"] = made["rules"]
    return {
        "v": 1,
        "event_id": made["create_event_id"],
        "match_id": made["match_id"],
        "player": MATCHMAKER,
        "at": made["at"],
        "action": action,
    }


def _result(
    record: LobbyRecord | Unreadable,
    status: str,
    events: list[Event],
    source: dict[str, Any] | None,
    duplicate: bool = False,
    reason: tuple[str, str] | None = None,
) -> dict[str, Any]:
    result = {
        "v": 1,
        "event_id": record.event_id,
        "player": record.player,
        "status": status,
        "duplicate": duplicate,
        "events": events,
        "at": record.at,
        "source": source,
    }
    if reason is not None:
        result["reason"] = {"code": reason[0], "message": reason[1]}
    return result


class Matchmaker:
    """Folds the lobby's records in order, holding the lobby."""

    def __init__(self, lobby: Lobby | None = None) -> None:
        self.lobby = lobby or Lobby()

    def feed(self, raw: bytes | str, source: dict[str, Any] | None = None) -> LobbyStep:
        taken = step(self.lobby, read(raw), source)
        self.lobby = taken.lobby
        return taken


def replay(records: Iterable[bytes]) -> Iterator[LobbyStep]:
    """Fold lobby records from an empty lobby, one step per record."""
    matchmaker = Matchmaker()
    for number, raw in enumerate(records, start=1):
        yield matchmaker.feed(raw, {"offset": number - 1})


def encode(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record)
