"""The lobby's state and `evolve`: the open seeks and the pool entries waiting, each in the order
they came (that order is the pairing order), plus the fold's bookkeeping (the latest time and the
recent submissions). Immutable and JSON-serialisable, like a match state."""

from __future__ import annotations

from typing import Any

from ..core import Event, Frozen
from ..timeutil import to_ms


class OpenSeek(Frozen):
    seek_id: str
    player: str
    game: str
    options: dict[str, Any]
    clock: dict[str, Any] | None
    rating: int
    rating_min: int | None
    rating_max: int | None
    seat: int | None
    expires_ms: int
    rules: str | None = None  # the rules version the seek stated (None: legacy, version 1 unstated)

    def admits(self, rating: int) -> bool:
        low_ok = self.rating_min is None or rating >= self.rating_min
        return low_ok and (self.rating_max is None or rating <= self.rating_max)


class PoolEntry(Frozen):
    entry_id: str
    pool_id: str
    player: str
    game: str
    options: dict[str, Any]
    clock: dict[str, Any] | None
    rating: int
    joined_ms: int
    expires_ms: int
    bot: str | None = None
    bot_after_ms: int | None = None
    rules: str | None = None  # the rules version the entry stated; its pool_id names it too


class Lobby(Frozen):
    """Everything the decider knows. `now_ms` and `recent_ids` are the fold's bookkeeping (the
    latest accepted record's time, never going back; the digests of the latest accepted submissions)."""

    seeks: tuple[OpenSeek, ...] = ()
    waiting: tuple[PoolEntry, ...] = ()
    now_ms: int = 0
    recent_ids: tuple[str, ...] = ()

    def seek(self, seek_id: str) -> OpenSeek | None:
        return next((seek for seek in self.seeks if seek.seek_id == seek_id), None)

    def entry_of(self, player: str) -> PoolEntry | None:
        return next((entry for entry in self.waiting if entry.player == player), None)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Lobby:
        return cls.model_validate(data)


def evolve(lobby: Lobby, event: Event) -> Lobby:
    """The lobby after one event."""
    kind = event["type"]
    if kind == "seek_opened":
        seek = OpenSeek(
            seek_id=event["seek_id"],
            player=event["player"],
            game=event["game"],
            options=event["options"],
            clock=event["clock"],
            rating=event["rating"],
            rating_min=event["rating_min"],
            rating_max=event["rating_max"],
            seat=event["seat"],
            expires_ms=to_ms(event["expires_at"]),
            rules=event.get("rules"),
        )
        return lobby.evolved(seeks=(*lobby.seeks, seek))
    if kind in ("seek_accepted", "seek_closed"):
        return lobby.evolved(seeks=tuple(s for s in lobby.seeks if s.seek_id != event["seek_id"]))
    if kind == "pool_joined":
        after = event["bot_after_s"]
        entry = PoolEntry(
            entry_id=event["entry_id"],
            pool_id=event["pool_id"],
            player=event["player"],
            game=event["game"],
            options=event["options"],
            clock=event["clock"],
            rating=event["rating"],
            joined_ms=to_ms(event["at"]),
            expires_ms=to_ms(event["expires_at"]),
            bot=event["bot"],
            bot_after_ms=None if after is None else after * 1000,
            rules=event.get("rules"),
        )
        return lobby.evolved(waiting=(*lobby.waiting, entry))
    if kind == "pool_left":
        return lobby.evolved(waiting=tuple(e for e in lobby.waiting if e.entry_id != event["entry_id"]))
    if kind == "match_made":
        paired = set(event["entries"])
        return lobby.evolved(waiting=tuple(e for e in lobby.waiting if e.entry_id not in paired))
    raise ValueError(f"not a lobby event: {kind!r}")
