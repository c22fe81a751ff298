"""Vacations of a correspondence clock (docs/correspondence.md), decided and evolved for
`games.match`: `{"type": "vacation", "days": N}` pauses the sender's clock for N days of their
allowance in this match; `{"type": "end_vacation"}` ends it early and gives back the whole days
not begun. A vacation that runs to its end ends without an event: from then the seat's time runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, Self, TypeVar

from pydantic import ValidationError

from schemas.lifecycle import Vacation

from .clocks import DAY_MS, AnyClockState, DaysClock
from .core import Event, Rejected, describe_validation_error, illegal
from .timeutil import from_ms, to_ms


class ClockedMatch(Protocol):
    """What a vacation needs of a match (games.match.MatchState): its clock, who is to move, and
    a copy with a new clock. A protocol, so this module never imports the match it serves."""

    @property
    def clock(self) -> AnyClockState | None: ...

    def to_move(self) -> tuple[int, ...]: ...

    def evolved(self, **changes: Any) -> Self: ...


Match = TypeVar("Match", bound=ClockedMatch)


def _days_clock(state: ClockedMatch) -> DaysClock:
    if not isinstance(state.clock, DaysClock):
        kind = "no clock" if state.clock is None else "a Fischer clock"
        raise illegal(f"vacations are for correspondence clocks (days per move); this match has {kind}")
    return state.clock


def vacation_days(action: dict[str, Any]) -> int:
    """The days a vacation action asks for; Rejected `malformed` when it is not of the Vacation shape
    (whatever the position: the gateway's door refuses it with this too)."""
    try:
        return Vacation.model_validate(action).days
    except ValidationError as error:
        raise Rejected("malformed", describe_validation_error(error, "vacation action")) from None


def take_vacation(state: ClockedMatch, seat: int, action: dict[str, Any], at: str) -> Event:
    """The `vacation_started` event of `seat` asking for `action["days"]` days at `at` (or Rejected)."""
    days = vacation_days(action)
    clock, now = _days_clock(state), to_ms(at)
    until = clock.paused(seat, now)
    if until is not None:
        raise illegal(f"seat {seat} is on vacation until {from_ms(until)} already; end it (end_vacation) first")
    allowance = clock.vacation_days_left[seat]
    if days > allowance:
        raise illegal(
            f"seat {seat} has {allowance} vacation day(s) left in this match and asked for {days}"
            + ("" if allowance else "; the allowance is used up")
        )
    if seat in state.to_move() and clock.left(seat, now, running=True) <= 0:
        raise illegal(f"seat {seat}'s clock ran out; the match ends when the timeout is claimed")
    return {"type": "vacation_started", "seat": seat, "days": days, "until": from_ms(now + days * DAY_MS), "at": at}


def end_vacation(state: ClockedMatch, seat: int, at: str) -> Event:
    """The `vacation_ended` event of `seat` coming back at `at` (or Rejected)."""
    clock, now = _days_clock(state), to_ms(at)
    until = clock.paused(seat, now)
    if until is None:
        last = clock.vacation_until_ms[seat]
        ended = f" (the last one ended at {from_ms(last)})" if last is not None else ""
        raise illegal(f"seat {seat} is not on vacation{ended}")
    return {"type": "vacation_ended", "seat": seat, "days_back": (until - now) // DAY_MS, "at": at}


def evolve_vacation(state: Match, event: Event) -> Match:
    """The match after a `vacation_started` or `vacation_ended` event."""
    clock = _days_clock(state)
    seat, now = event["seat"], to_ms(event["at"])
    running = seat in state.to_move()
    if event["type"] == "vacation_started":
        clock = clock.vacation_started(seat, now, event["days"], to_ms(event["until"]), running)
    else:
        clock = clock.vacation_ended(seat, now, event["days_back"], running)
    return state.evolved(clock=clock)


def why_not_timed_out(clock: AnyClockState, to_move: Iterable[int], now: int, at: str) -> str:
    """The message of a claim_timeout refused because the seats to move still have time on `clock`."""
    parts = []
    for seat in to_move:
        left = clock.left(seat, now, running=True)
        until = clock.paused(seat, now)
        if until is not None:
            parts.append(
                f"seat {seat} is on vacation until {from_ms(until)}; its clock runs again then, "
                f"with {left / DAY_MS:.2f} day(s)"
            )
        elif isinstance(clock, DaysClock):
            parts.append(f"seat {seat}: {left / DAY_MS:.3f} day(s)")
        else:
            parts.append(f"seat {seat}: {left / 1000:.3f}s")
    return f"the seat to move still has time as of {at} ({', '.join(parts)})"
