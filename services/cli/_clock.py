"""Clocks in words for the terminal: `--clock` parsing, and the "days left" line of a correspondence
clock (`plylog show`, `plylog play`), from a match's public view."""

from __future__ import annotations

from typing import Any

from games.clocks import DAY_MS
from games.timeutil import from_ms

from ._errors import CliError

CLOCK_HELP = (
    "A Fischer clock SECONDS[+INCREMENT], e.g. 300+5; or a correspondence clock DAYSd (days per move: "
    "1d, 2d, 3d, 5d, 7d or 14d)."
)


def parse_clock(text: str | None, vacation_days: int | None = None) -> dict[str, Any] | None:
    """The create's clock for `--clock` (and `--vacation-days`, correspondence only)."""
    if text is None:
        if vacation_days is not None:
            raise CliError("--vacation-days needs a correspondence clock", "e.g. --clock 3d --vacation-days 7")
        return None
    if text.lower().endswith("d"):
        try:
            days = int(text[:-1])
        except ValueError:
            raise CliError(f"--clock {text!r} is not DAYSd", "e.g. --clock 3d (three days per move)") from None
        clock: dict[str, Any] = {"kind": "correspondence", "days_per_move": days}
        if vacation_days is not None:
            clock["vacation_days"] = vacation_days
        return clock
    if vacation_days is not None:
        raise CliError("--vacation-days needs a correspondence clock", "e.g. --clock 3d --vacation-days 7")
    initial, _, increment = text.partition("+")
    try:
        return {"initial_s": float(initial), "increment_s": float(increment or 0)}
    except ValueError:
        raise CliError(
            f"--clock {text!r} is not SECONDS[+INCREMENT] nor DAYSd", "e.g. --clock 300+5, --clock 3d"
        ) from None


def _when(ms: int) -> str:
    return from_ms(ms)[:16].replace("T", " ") + " UTC"


def _duration(ms: int) -> str:
    if ms <= 0:
        return "no time"
    hours, minutes = divmod(ms // 60_000, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days} day{'s' if days != 1 else ''} {hours} h"
    return f"{hours} h {minutes} min"


def days_left_line(view: dict[str, Any] | None, now_ms: int) -> str | None:
    """`correspondence, 3 days per move: alice (seat 0) to move, 2 days 4 h left (until ...)`, with
    who is on vacation; None unless the view has a correspondence clock."""
    if not view:
        return None
    clock = view.get("clock") or {}
    if clock.get("kind") != "correspondence":
        return None
    parts = [f"correspondence, {clock['days_per_move']} day{'s' if clock['days_per_move'] != 1 else ''} per move"]
    seats = view.get("seats") or [None, None]
    deadline = clock.get("deadline_ms")
    if view.get("status") == "active" and deadline is not None:
        movers = ", ".join(f"{seats[s] or '?'} (seat {s})" for s in view.get("to_move") or [])
        left = deadline - now_ms
        state = (
            f"{_duration(left)} left ({left / DAY_MS:.1f} days, until {_when(deadline)})" if left > 0 else "time is up"
        )
        parts.append(f"{movers} to move: {state}")
    for seat, until in enumerate(clock.get("vacation_until_ms") or []):
        if until is not None and until > now_ms:
            parts.append(f"{seats[seat] or '?'} (seat {seat}) is on vacation until {_when(until)}")
    allowance = clock.get("vacation_days_left") or [0, 0]
    parts.append(f"vacation days left: {allowance[0]} and {allowance[1]}")
    return " · ".join(parts)
