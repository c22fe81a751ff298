"""Checks of result and outcome records read from Kafka, which clients nobody here wrote may have
produced too: what the projector applies and what the gateway hands to a seat's socket early
(services/gateway/live.py) must pass the same checks. An empty string: usable; else why not.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, get_args

from games.timeutil import to_ms
from schemas.base import GAME_NAMES, TIMESTAMP_PATTERN, is_match_id
from schemas.views import MatchView

VIEW_STATUSES = frozenset(get_args(MatchView.model_fields["status"].annotation))  # the contract's
_TIMESTAMP = re.compile(TIMESTAMP_PATTERN)


def result_problem(data: Any) -> str:
    """Why a result cannot be applied (empty when it can): every field planning reads is checked
    here, so that a record nobody here wrote can neither raise while planning nor put a value
    Redis refuses into the batch's script (which would fail the whole batch again and again)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("status") not in ("accepted", "rejected") or not is_int(data.get("seq")):
        return "no status accepted|rejected and integer seq"
    if not is_match_id(data.get("match_id")):
        return "match_id is not a match id" if data["status"] == "accepted" else ""
    if data["status"] != "accepted" or data.get("duplicate"):
        return ""
    for name in ("event_id", "player"):
        if not isinstance(data.get(name), str):
            return f"an accepted result needs a string {name}"
    if (
        not is_time(data.get("at"))
        or not isinstance(data.get("events"), list)
        or not all(isinstance(e, dict) for e in data["events"])
    ):
        return "an accepted result needs an RFC 3339 at and a list of event objects"
    return view_problem(data.get("view"))


def view_problem(view: Any) -> str:
    if not isinstance(view, dict) or view.get("game") not in GAME_NAMES or view.get("status") not in VIEW_STATUSES:
        return "an accepted result needs a view with a known game and a status"
    seats = view.get("seats")
    if not isinstance(seats, list) or len(seats) != 2 or not all(p is None or isinstance(p, str) for p in seats):
        return "view.seats must be two player ids or nulls"
    for name in ("created_at", "started_at", "ended_at"):
        if view.get(name) is not None and not is_time(view[name]):
            return f"view.{name} must be an RFC 3339 time or null"
    if view.get("outcome") is not None and not isinstance(view["outcome"], dict):
        return "view.outcome must be an object or null"
    to_move, clock = view.get("to_move"), view.get("clock")
    if not isinstance(to_move, list) or not all(seat in (0, 1) and is_int(seat) for seat in to_move):
        return "view.to_move must be a list of seats"
    if clock is not None:
        remaining = clock.get("remaining_ms") if isinstance(clock, dict) else None
        if (
            not isinstance(remaining, list)
            or len(remaining) != 2
            or not all(is_int(r) for r in remaining)
            or not (clock.get("since_ms") is None or is_int(clock["since_ms"]))
        ):
            return "view.clock must be null or {remaining_ms: [int, int], since_ms: int|null, ...}"
    return ""


def outcome_problem(data: Any) -> str:
    if not isinstance(data, dict):
        return "not a JSON object"
    players, outcome = data.get("players"), data.get("outcome")
    if not is_match_id(data.get("match_id")) or data.get("game") not in GAME_NAMES:
        return "no match id and known game"
    if (
        not isinstance(players, list)
        or len(players) != 2
        or not all(p is None or isinstance(p, str) for p in players)
        or not isinstance(outcome, dict)
        or outcome.get("winner") not in (0, 1, None)
        or isinstance(outcome.get("winner"), bool)
    ):
        return "needs two players and an outcome with winner 0, 1 or null"
    return ""


def is_int(value: Any) -> bool:
    """An integer Redis scripts keep exactly (a Lua number is a double)."""
    return type(value) is int and -_EXACT < value < _EXACT


_EXACT = 2**53


def is_time(value: Any) -> bool:
    if not isinstance(value, str) or not _TIMESTAMP.match(value):
        return False
    try:
        ms(value)
    except ValueError:
        return False
    return True


# A result's `at` is read when it is checked and again when it is planned; a match's created and
# started times come with every one of its results.
ms = lru_cache(maxsize=8192)(to_ms)
