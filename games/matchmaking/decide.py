"""The matchmaking decider: `decide(lobby, record)` -> the events it makes happen, or `Rejected`.

Every record is decided at `now` = the later of its `at` and the latest accepted record's (time never
goes back), in three steps whose events follow each other in the answer:

1. what expired by `now`: seeks (`seek_closed` expired) and pool entries (`pool_left` expired);
2. the record's own action (a tick has none);
3. a pairing pass over every pool (games.matchmaking.pairing), then the bot seats whose wait ran out.

A rejected record changes nothing, not even the expiries of step 1 (the next accepted record makes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any, assert_never

from schemas.matchmaking import (
    MATCHMAKER,
    AcceptSeek,
    CancelSeek,
    JoinPool,
    LeavePool,
    LobbyAction,
    LobbyRecord,
    Seek,
    Tick,
)

from ..core import Event, Game, Rejected
from ..registry import get_game, rules_version
from ..timeutil import from_ms, to_ms
from . import rules
from .pairing import pool_pairs
from .state import Lobby, OpenSeek, PoolEntry, evolve


def decide(lobby: Lobby, record: LobbyRecord) -> list[Event] | Rejected:
    """The events of one lobby record, or why it is refused."""
    try:
        return _decide(lobby, record)
    except Rejected as rejection:
        return rejection


def apply(lobby: Lobby, events: list[Event]) -> Lobby:
    for event in events:
        lobby = evolve(lobby, event)
    return lobby


def _decide(lobby: Lobby, record: LobbyRecord) -> list[Event]:
    now = max(lobby.now_ms, to_ms(record.at))
    at = from_ms(now)
    action = record.action
    if isinstance(action, Tick) and record.player != MATCHMAKER:
        raise Rejected("not_matchmaker", f"only {MATCHMAKER} sends ticks")
    events = _expired(lobby, now, at)
    lobby = apply(lobby, events)
    own = _own(lobby, record, action, now, at)
    lobby = apply(lobby, own)
    return [*events, *own, *_pairings(lobby, now, at)]


def _expired(lobby: Lobby, now: int, at: str) -> list[Event]:
    events: list[Event] = [
        {"type": "seek_closed", "seek_id": seek.seek_id, "reason": "expired", "at": at}
        for seek in lobby.seeks
        if seek.expires_ms <= now
    ]
    events += [_left(entry, "expired", at) for entry in lobby.waiting if entry.expires_ms <= now]
    return events


def _left(entry: PoolEntry, reason: str, at: str) -> Event:
    return {
        "type": "pool_left",
        "entry_id": entry.entry_id,
        "pool_id": entry.pool_id,
        "player": entry.player,
        "reason": reason,
        "at": at,
    }


def _game_terms(action: Seek | JoinPool) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The options, as given, once the game (of the rules version stated) accepts them (Rejected as
    the create would be), and the clock. The create gets them as given: the game fills in defaults."""
    _game_of(action).normalise_options(action.options)
    return action.options, None if action.clock is None else action.clock.model_dump()


def _game_of(action: Seek | JoinPool) -> Game:
    """The rules the action's matches are played by: the version it states (Rejected
    `unknown_rules` for another game's or one that does not exist), else version 1."""
    return get_game(action.game, 1 if action.rules is None else rules_version(action.game, action.rules))


def _stated(rules: str | None) -> dict[str, str]:
    """`rules` as an event field: present only when stated, so old lobby logs keep their bytes."""
    return {} if rules is None else {"rules": rules}


def _expiry(ttl_s: int | None, now: int) -> str:
    return from_ms(now + (rules.DEFAULT_TTL_MS if ttl_s is None else ttl_s * 1000))


# --- the actions ----------------------------------------------------------------------------------------
def _own(lobby: Lobby, record: LobbyRecord, action: LobbyAction, now: int, at: str) -> list[Event]:
    """The events of the record's own `action`, by its type."""
    match action:
        case Seek():
            return _seek(lobby, record, action, now, at)
        case AcceptSeek():
            return _accept(lobby, record, action, at)
        case CancelSeek():
            return _cancel(lobby, record, action, at)
        case JoinPool():
            return _join(lobby, record, action, now, at)
        case LeavePool():
            return _leave(lobby, record, at)
        case Tick():
            return []
        case _:  # mypy checks that the cases above cover LobbyAction
            assert_never(action)


def _seek(lobby: Lobby, record: LobbyRecord, action: Seek, now: int, at: str) -> list[Event]:
    mine = sum(1 for seek in lobby.seeks if seek.player == record.player)
    if mine >= rules.MAX_SEEKS_PER_PLAYER:
        raise Rejected("too_many_seeks", f"{record.player!r} has {mine} open seeks, the most a player may have")
    if len(lobby.seeks) >= rules.MAX_OPEN_SEEKS:
        raise Rejected("lobby_full", f"the lobby holds {len(lobby.seeks)} open seeks, the most it may hold")
    seek_id = rules.seek_id(record.player, record.event_id)
    if lobby.seek(seek_id) is not None:
        raise Rejected("illegal", f"seek {seek_id} (this record's) is open already")
    options, clock = _game_terms(action)
    return [
        {
            "type": "seek_opened",
            "seek_id": seek_id,
            "player": record.player,
            "game": action.game,
            "options": options,
            "clock": clock,
            "rating": action.rating,
            "rating_min": action.rating_min,
            "rating_max": action.rating_max,
            "seat": action.seat,
            "expires_at": _expiry(action.ttl_s, now),
            "at": at,
            **_stated(action.rules),
        }
    ]


def _open_seek(lobby: Lobby, seek_id: str) -> OpenSeek:
    seek = lobby.seek(seek_id)
    if seek is None:
        raise Rejected(
            "unknown_seek", f"no open seek {seek_id}: it was accepted, cancelled or expired, or never opened"
        )
    return seek


def _accept(lobby: Lobby, record: LobbyRecord, action: AcceptSeek, at: str) -> list[Event]:
    seek = _open_seek(lobby, action.seek_id)
    if seek.player == record.player:
        raise Rejected("own_seek", f"{seek.seek_id} is {record.player!r}'s own seek; cancel it instead")
    if not seek.admits(action.rating):
        low = "any" if seek.rating_min is None else seek.rating_min
        high = "any" if seek.rating_max is None else seek.rating_max
        raise Rejected("out_of_range", f"rating {action.rating} is outside {seek.seek_id}'s range ({low} to {high})")
    match = rules.match_id("seek", seek.seek_id, rules.submission(record.player, record.event_id))
    seeker_first = seek.seat == 0 if seek.seat is not None else rules.first_seat_of(match) == 0
    players = [(seek.player, seek.rating), (record.player, action.rating)]
    if not seeker_first:
        players.reverse()
    accepted = {"type": "seek_accepted", "seek_id": seek.seek_id, "player": record.player, "rating": action.rating}
    made = _made(match, "seek", players, seek, at, seek_id=seek.seek_id)
    return [{**accepted, "at": at}, made]


def _cancel(lobby: Lobby, record: LobbyRecord, action: CancelSeek, at: str) -> list[Event]:
    seek = _open_seek(lobby, action.seek_id)
    if seek.player != record.player:
        raise Rejected("not_yours", f"{seek.seek_id} is {seek.player!r}'s seek; only they may cancel it")
    return [{"type": "seek_closed", "seek_id": seek.seek_id, "reason": "cancelled", "at": at}]


def _join(lobby: Lobby, record: LobbyRecord, action: JoinPool, now: int, at: str) -> list[Event]:
    waiting = lobby.entry_of(record.player)
    if waiting is not None:
        since = from_ms(waiting.joined_ms)
        raise Rejected("already_waiting", f"{record.player!r} waits in {waiting.pool_id} since {since}; leave it first")
    if len(lobby.waiting) >= rules.MAX_WAITING:
        raise Rejected("lobby_full", f"the pools hold {len(lobby.waiting)} players, the most they may hold")
    if action.bot == record.player:
        raise Rejected("illegal", "a player cannot take the bot's seat against themselves")
    options, clock = _game_terms(action)
    game = _game_of(action)
    defaults = game.normalise_options({})
    pool = rules.pool_id(action.game, game.normalise_options(options), defaults, clock, action.rules)
    return [
        {
            "type": "pool_joined",
            "entry_id": rules.entry_id(record.player, record.event_id),
            "pool_id": pool,
            "player": record.player,
            "game": action.game,
            "options": options,
            "clock": clock,
            "rating": action.rating,
            "bot": action.bot,
            "bot_after_s": action.bot_after_s,
            "expires_at": _expiry(action.ttl_s, now),
            "at": at,
            **_stated(action.rules),
        }
    ]


def _leave(lobby: Lobby, record: LobbyRecord, at: str) -> list[Event]:
    entry = lobby.entry_of(record.player)
    if entry is None:
        raise Rejected("not_waiting", f"{record.player!r} waits in no pool")
    return [_left(entry, "left", at)]


# --- pairings ---------------------------------------------------------------------------------------------
def _made(
    match: str,
    via: str,
    players: Sequence[tuple[str, int | None]],
    terms: OpenSeek | PoolEntry,
    at: str,
    *,
    seek_id: str | None = None,
    pool_id: str | None = None,
    entries: list[str | None] | None = None,
    window: int | None = None,
) -> Event:
    """A `match_made` event; `players` (player, rating) by seat; the game, options, clock and
    rules version those of the seek or pool entry (`terms`)."""
    return {
        "type": "match_made",
        "match_id": match,
        "create_event_id": rules.create_event_id(match),
        "via": via,
        "seek_id": seek_id,
        "pool_id": pool_id,
        "entries": entries or [None, None],
        "seats": [player for player, _ in players],
        "ratings": [rating for _, rating in players],
        "window": window,
        "game": terms.game,
        "options": terms.options,
        "clock": terms.clock,
        "at": at,
        **_stated(terms.rules),
    }


def _pairings(lobby: Lobby, now: int, at: str) -> list[Event]:
    """Every pool's pairs (pools in the order of their longest-waiting entry), then the bots."""
    events: list[Event] = []
    paired: set[str] = set()
    order = {pool: place for place, pool in reversed(list(enumerate(e.pool_id for e in lobby.waiting)))}
    by_pool = sorted(lobby.waiting, key=lambda entry: order[entry.pool_id])  # stable: join order within a pool
    for _, entries in groupby(by_pool, key=lambda entry: entry.pool_id):
        for pair in pool_pairs(list(entries), now):
            events.append(_from_pool(pair.first, pair.second, pair.window, at))
            paired.update((pair.first.entry_id, pair.second.entry_id))
    for entry in lobby.waiting:
        if entry.bot is None or entry.entry_id in paired:
            continue
        assert entry.bot_after_ms is not None, "an entry with a bot has its wait (JoinPool takes both or neither)"
        if now - entry.joined_ms >= entry.bot_after_ms:
            events.append(_with_bot(entry, entry.bot, at))
    return events


def _from_pool(first: PoolEntry, second: PoolEntry, window: int, at: str) -> Event:
    match = rules.match_id("pool", first.entry_id, second.entry_id)
    pair = [first, second] if rules.first_seat_of(match) == 0 else [second, first]
    return _made(
        match,
        "pool",
        [(entry.player, entry.rating) for entry in pair],
        first,
        at,
        pool_id=first.pool_id,
        entries=[entry.entry_id for entry in pair],
        window=window,
    )


def _with_bot(entry: PoolEntry, bot: str, at: str) -> Event:
    """The match of `entry` against its `bot`."""
    match = rules.match_id("bot", entry.entry_id, bot)
    players: list[tuple[str, int | None]] = [(entry.player, entry.rating), (bot, None)]
    entries: list[str | None] = [entry.entry_id, None]
    if rules.first_seat_of(match) == 1:
        players.reverse()
        entries.reverse()
    return _made(match, "bot", players, entry, at, pool_id=entry.pool_id, entries=entries)
