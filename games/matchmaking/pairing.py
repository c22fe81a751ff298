"""Who plays whom in a pool (docs/matchmaking.md, "The pairing rule"), as a pure function of the
entries waiting and the time.

Entries are taken in join order (the longest waiting first). Each entry not yet paired is paired
with the entry nearest to it in rating among those within both windows (|rating difference| <=
the smaller of the two windows at `now_ms`); among equally near ones, the one that joined first.
An entry nobody fits waits for the next pass. Self-contained: the tournament pairings
(games/tournaments) follow other rules and share nothing with it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import NamedTuple

from .rules import window
from .state import PoolEntry


class Pair(NamedTuple):
    first: PoolEntry  # the one that waited longer
    second: PoolEntry
    window: int  # the smaller of the two windows, at the pairing


def pool_pairs(entries: Sequence[PoolEntry], now_ms: int) -> list[Pair]:
    """The pairs the rule makes among `entries` (one pool, in join order) at `now_ms`.

    The entries not yet paired are kept in rating order; each entry's candidates are visited from
    the nearest outwards and the walk stops beyond its window or beyond the nearest fit found, so
    a pass costs about the entries times the few visited each, not their square."""
    windows = [window(entry.joined_ms, now_ms) for entry in entries]
    free = sorted((entry.rating, i) for i, entry in enumerate(entries))  # (rating, join position), unpaired
    paired = [False] * len(entries)
    pairs = []
    for i, first in enumerate(entries):
        if paired[i]:
            continue
        j = _nearest_fit(entries, windows, free, i)
        if j is None:
            continue
        paired[i] = paired[j] = True
        for key in ((first.rating, i), (entries[j].rating, j)):
            del free[bisect_left(free, key)]
        pairs.append(Pair(first, entries[j], min(windows[i], windows[j])))
    return pairs


def _nearest_fit(entries: Sequence[PoolEntry], windows: list[int], free: list[tuple[int, int]], i: int) -> int | None:
    """The join position of the unpaired entry nearest in rating to entry `i` within both windows
    (ties: the one that joined first), or None."""
    rating, reach = entries[i].rating, windows[i]
    at = bisect_left(free, (rating, i))
    left, right = at - 1, at + 1
    best: tuple[int, int] | None = None  # (distance, join position)
    while True:
        to_left = rating - free[left][0] if left >= 0 else None
        to_right = free[right][0] - rating if right < len(free) else None
        if to_left is not None and (to_right is None or to_left <= to_right):
            go_left, distance, j = True, to_left, free[left][1]
        elif to_right is not None:
            go_left, distance, j = False, to_right, free[right][1]
        else:
            break
        if distance > reach or (best is not None and distance > best[0]):
            break
        if distance <= windows[j] and entries[j].player != entries[i].player and (best is None or (distance, j) < best):
            best = (distance, j)
        if go_left:
            left -= 1
        else:
            right += 1
    return None if best is None else best[1]
