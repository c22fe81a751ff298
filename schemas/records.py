"""The records on plylog's topics (see CONTRACT.md)."""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field, StrictInt

from .base import EventId, Version, GameName, MatchId, PlayerId, RejectionCode, Strict, Timestamp
from .lifecycle import Outcome


class MoveRecord(Strict):
    """One submitted action on `plylog.moves`; the source of truth."""

    v: Version = 1
    event_id: EventId
    match_id: MatchId
    player: PlayerId
    expected_seq: Optional[StrictInt] = Field(default=None, ge=0)
    at: Timestamp
    action: dict[str, Any] = Field(description="validated per game; `type` selects the action")


class Reason(Strict):
    code: RejectionCode
    message: str


class Source(Strict):
    """Where the move record came from: a topic position or a line of a log file."""

    partition: Optional[int] = None
    offset: Optional[int] = None
    file: Optional[str] = None
    line: Optional[int] = None


class ResultRecord(Strict):
    """One result per move record on `plylog.results`."""

    v: Version = 1
    event_id: Optional[str]
    match_id: Optional[str]
    player: Optional[str]
    status: Literal["accepted", "rejected"]
    seq: int = Field(ge=0)
    duplicate: bool = False
    events: list[dict[str, Any]]
    view: Optional[dict[str, Any]]
    at: Optional[str]
    source: Optional[Source] = None
    reason: Optional[Reason] = None


class OutcomeRecord(Strict):
    """One record per finished match on `plylog.outcomes` (one partition)."""

    v: Version = 1
    match_id: MatchId
    game: GameName
    players: list[Optional[PlayerId]]
    outcome: Outcome
    rated: bool
    started_at: Optional[Timestamp]
    ended_at: Timestamp
    seq: int


class DeadLetter(Strict):
    """A record that is not a JSON object with usable ids (or whose answer Kafka refused): its first
    64 KiB as base64, and the size and SHA-256 of all of it, so a dead letter always fits."""

    v: Version = 1
    error: str
    raw_b64: str = Field(description="the record's bytes, base64; only the first 64 KiB when raw_truncated")
    raw_size: Optional[int] = Field(default=None, ge=0, description="bytes in the whole record")
    raw_sha256: Optional[str] = Field(default=None, pattern=r"^[0-9a-f]{64}$", description="of the whole record")
    raw_truncated: bool = False
    topic: str
    partition: int
    offset: int
