"""The matchmaking rule's numbers and names (docs/matchmaking.md): the rating window of a pool
entry, the names of pools, and the ids the decider derives (seek, entry, match, create event), so
that the same records always give the same ids."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

#: A pool entry's rating window: BASE_WINDOW at first, WIDEN_BY more every WIDEN_EVERY_MS of
#: waiting, never above MAX_WINDOW (reached after 140 s).
BASE_WINDOW = 100
WIDEN_BY = 50
WIDEN_EVERY_MS = 10_000
MAX_WINDOW = 800

DEFAULT_TTL_MS = 24 * 3600 * 1000  # a seek or a pool entry not given a ttl_s lasts a day
MAX_SEEKS_PER_PLAYER = 5
MAX_OPEN_SEEKS = 10_000
MAX_WAITING = 10_000  # pool entries, all pools together
ID_MEMORY = 1024  # accepted submissions remembered to answer a retry `duplicate`
DEFAULT_VACATION_DAYS = 7


def window(joined_ms: int, now_ms: int) -> int:
    """The rating window (points either side) of an entry that joined at `joined_ms`, at `now_ms`."""
    steps = max(0, now_ms - joined_ms) // WIDEN_EVERY_MS
    return min(MAX_WINDOW, BASE_WINDOW + WIDEN_BY * steps)


def digest(*parts: str, size: int = 10) -> str:
    """Hex blake2b of the parts, each length-prefixed (so no two tuples of parts collide by joining)."""
    text = "".join(f"{len(part)}:{part}" for part in parts).encode()
    return hashlib.blake2b(text, digest_size=size).hexdigest()


def submission(player: str, event_id: str) -> str:
    """One player's submission: the same event id from another player is another submission."""
    return digest(player, event_id)


def seek_id(player: str, event_id: str) -> str:
    return f"s-{submission(player, event_id)}"


def entry_id(player: str, event_id: str) -> str:
    return f"p-{submission(player, event_id)}"


def match_id(via: str, first: str, second: str) -> str:
    """The id of the match a pairing makes: from what was paired, so making it again names it again."""
    return f"mm-{digest(via, first, second)}"


def create_event_id(match: str) -> str:
    return f"{match}:create"


def first_seat_of(match: str) -> int:
    """Which of the pair (0: the first named, 1: the second) takes seat 0, drawn from the match id."""
    return int(match[-1], 16) % 2


def clock_label(clock: dict[str, Any] | None) -> str:
    if clock is None:
        return "untimed"
    if clock.get("kind") == "correspondence":
        vacation = clock.get("vacation_days", DEFAULT_VACATION_DAYS)
        return f"{clock['days_per_move']}d" + ("" if vacation == DEFAULT_VACATION_DAYS else f"-v{vacation}")
    return f"{clock['initial_s']:g}+{clock.get('increment_s', 0):g}"


def pool_id(
    game: str,
    options: dict[str, Any],
    default_options: dict[str, Any],
    clock: dict[str, Any] | None,
    rules: str | None = None,
) -> str:
    """`strands/300+5`, `mana/3d`, `mastermind/untimed/o-1a2b3c4d` (options other than the defaults);
    `strands/2/300+5` for entries stating their rules version: only entries of one pool pair, so
    entries of other versions (or stating none, as before versions) never meet."""
    name = f"{rules or game}/{clock_label(clock)}"
    if options != default_options:
        name += "/o-" + digest(orjson.dumps(options, option=orjson.OPT_SORT_KEYS).decode(), size=4)
    return name
