"""The records on plylog's topics (the wire contract: docs/contract.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, StrictInt

from .base import (
    CHAIN_PATTERN,
    GAME_NAMES,
    EventId,
    GameName,
    MatchId,
    PlayerId,
    RejectionCode,
    Strict,
    Timestamp,
    Version,
)
from .catalog import game_models, view_model
from .lifecycle import LIFECYCLE_EVENTS, Outcome


def tagged_union(models: tuple[type[BaseModel], ...], tag: str) -> Any:
    """One of `models`, told apart by the value of their `tag` field (a JSON Schema `oneOf`)."""
    # Union[] of a tuple built at run time: the `|` spelling cannot take one
    return Annotated[Union[models], Field(discriminator=tag)]  # noqa: UP007 - see the line above


# Any game's public view, by its `game`; any public event of any game, by its `type`
# (event types are unique across the games).
AnyView = tagged_union(tuple(view_model(game) for game in GAME_NAMES), "game")
AnyEvent = tagged_union((*LIFECYCLE_EVENTS, *(m for game in GAME_NAMES for m in game_models(game, "EVENTS"))), "type")


class MoveRecord(Strict):
    """One submitted action on `plylog.moves`; the source of truth."""

    v: Version = 1
    event_id: EventId
    match_id: MatchId
    player: PlayerId
    expected_seq: StrictInt | None = Field(default=None, ge=0)
    at: Timestamp
    action: dict[str, Any] = Field(description="validated per game; `type` selects the action")


class Reason(Strict):
    code: RejectionCode
    message: str


class Source(Strict):
    """Where the move record came from: a topic position or a line of a log file."""

    partition: int | None = None
    offset: int | None = None
    file: str | None = None
    line: int | None = None


class ResultRecord(Strict):
    """One result per move record on `plylog.results`."""

    v: Version = 1
    event_id: str | None
    match_id: str | None
    player: str | None
    status: Literal["accepted", "rejected"]
    seq: int = Field(ge=0)
    duplicate: bool = False
    events: list[AnyEvent] = Field(  # type: ignore[valid-type]  # a union built at run time from the games' models
        description="the public events the move produced, in order; [] unless accepted and not a duplicate"
    )
    view: AnyView | None = Field(  # type: ignore[valid-type]  # a union built at run time from the games' views
        description="the match's public view after the result, its `game` selects "
        "the schema; null when the match does not exist or the record "
        "could not be read"
    )
    at: str | None
    source: Source | None = None
    reason: Reason | None = None
    chain: str | None = Field(
        default=None,
        pattern=CHAIN_PATTERN,
        description="the receipt chain's link after this result (games/receipts.py); only on accepted, "
        "non-duplicate results of a match whose create stated `rules`",
    )


class OutcomeRecord(Strict):
    """One record per finished match on `plylog.outcomes` (one partition)."""

    v: Version = 1
    match_id: MatchId
    game: GameName
    players: list[PlayerId | None]
    outcome: Outcome
    rated: bool
    started_at: Timestamp | None
    ended_at: Timestamp
    seq: int


class DeadLetter(Strict):
    """A record that is not a JSON object with usable ids (or whose answer Kafka refused): its first
    64 KiB as base64, and the size and SHA-256 of all of it, so a dead letter always fits."""

    v: Version = 1
    error: str
    raw_b64: str = Field(description="the record's bytes, base64; only the first 64 KiB when raw_truncated")
    raw_size: int | None = Field(default=None, ge=0, description="bytes in the whole record")
    raw_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$", description="of the whole record")
    raw_truncated: bool = False
    key_size: int | None = Field(default=None, ge=0, description="bytes in the record's key; only when key_truncated")
    key_sha256: str | None = Field(
        default=None, pattern=r"^[0-9a-f]{64}$", description="of the record's whole key; only when key_truncated"
    )
    key_truncated: bool = Field(
        default=False,
        description="the letter's Kafka key is only the first 64 KiB of the "
        "record's (a key over that; else it is the key as received)",
    )
    topic: str
    partition: int
    offset: int
