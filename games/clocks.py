"""The clocks of a match, as immutable values: a Fischer clock (`FischerClock`: time per match, an
increment per action) and a correspondence clock (`DaysClock`: days per move, with vacations).
`games.match` asks a clock how much time a seat has left and has it charge an action; the rules
of each kind live here (docs/correspondence.md).

Both keep the same two numbers per seat, so a view's `since_ms + remaining_ms[seat to move]` is
the moment the seat to move runs out, whatever the kind (the projector's deadline): `remaining_ms`
is each seat's time as of its last change, and the seat to move also spends the time since
`since_ms`. A correspondence seat on vacation has `since_ms` at its vacation's end: its time
starts to run then, and not before.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeVar

from .core import Frozen

DAY_MS = 86_400_000


def _spent(since_ms: int | None, now_ms: int, running: bool) -> int:
    return max(0, now_ms - since_ms) if running and since_ms is not None else 0


class FischerClock(Frozen):
    """Time per match, plus `increment_ms` after each own action. Its JSON is a match state's
    `clock` as it always was (no `kind`)."""

    #: Whether `charged` needs the seats to move next (games.match computes them only then).
    needs_next_movers: ClassVar[bool] = False

    initial_ms: int
    increment_ms: int
    remaining_ms: tuple[int, int]
    since_ms: int | None = None  # when the running seat's time started to run

    @classmethod
    def new(cls, clock: dict[str, Any]) -> FischerClock:
        initial = round(clock["initial_s"] * 1000)
        return cls(
            initial_ms=initial, increment_ms=round(clock.get("increment_s", 0) * 1000), remaining_ms=(initial, initial)
        )

    def left(self, seat: int, now_ms: int, running: bool) -> int:
        return self.remaining_ms[seat] - _spent(self.since_ms, now_ms, running)

    def charged(self, seat: int, now_ms: int, to_move: tuple[int, ...]) -> FischerClock:
        """After `seat` acted at `now_ms`: the time spent deducted, the increment added."""
        remaining = list(self.remaining_ms)
        remaining[seat] = self.left(seat, now_ms, running=True) + self.increment_ms
        return self.evolved(remaining_ms=tuple(remaining), since_ms=max(now_ms, self.since_ms or now_ms))

    def started(self, now_ms: int) -> FischerClock:
        return self.evolved(since_ms=now_ms)

    def stopped(self, now_ms: int, running: set[int]) -> FischerClock:
        """At the end of the match: each seat's time as of `now_ms`, nothing running."""
        return self.evolved(remaining_ms=tuple(self.left(s, now_ms, s in running) for s in (0, 1)), since_ms=None)

    def paused(self, seat: int, now_ms: int) -> int | None:
        return None

    def view(self, to_move: tuple[int, ...]) -> dict[str, Any]:
        return {
            "initial_ms": self.initial_ms,
            "increment_ms": self.increment_ms,
            "remaining_ms": list(self.remaining_ms),
            "since_ms": self.since_ms,
        }


class DaysClock(Frozen):
    """Days per move. The seat to move must act within `days_per_move` days of the moment its turn
    began (the other seat's action, the start, or the end of its vacation); each of its actions
    resets its time to the full days, so unused time is never carried over. A seat on vacation
    (until `vacation_until_ms`) spends no time; its allowance, in whole days, is per match."""

    needs_next_movers: ClassVar[bool] = True

    kind: Literal["correspondence"] = "correspondence"
    days_per_move: int
    remaining_ms: tuple[int, int]
    since_ms: int | None = None
    vacation_days_left: tuple[int, int]
    vacation_until_ms: tuple[int | None, int | None] = (None, None)

    @classmethod
    def new(cls, clock: dict[str, Any]) -> DaysClock:
        per_move = clock["days_per_move"] * DAY_MS
        days = clock.get("vacation_days", 0)
        return cls(
            days_per_move=clock["days_per_move"], remaining_ms=(per_move, per_move), vacation_days_left=(days, days)
        )

    def left(self, seat: int, now_ms: int, running: bool) -> int:
        return self.remaining_ms[seat] - _spent(self.since_ms, now_ms, running)

    def paused(self, seat: int, now_ms: int) -> int | None:
        """The end of `seat`'s vacation when it is on one at `now_ms`, else None."""
        until = self.vacation_until_ms[seat]
        return until if until is not None and now_ms < until else None

    def _resumes(self, now_ms: int, to_move: tuple[int, ...]) -> int:
        """When the time of the seats to move starts to run: now, or the end of their vacation."""
        return max([now_ms, *(self.paused(seat, now_ms) or now_ms for seat in to_move)])

    def charged(self, seat: int, now_ms: int, to_move: tuple[int, ...]) -> DaysClock:
        """After `seat` acted at `now_ms` (`to_move`: the seats to move next): `seat` has the full days
        again; the next seat's time runs from now, or from the end of its vacation."""
        remaining = list(self.remaining_ms)
        remaining[seat] = self.days_per_move * DAY_MS
        return self.evolved(remaining_ms=tuple(remaining), since_ms=self._resumes(now_ms, to_move))

    def started(self, now_ms: int) -> DaysClock:
        return self.evolved(since_ms=now_ms)

    def stopped(self, now_ms: int, running: set[int]) -> DaysClock:
        return self.evolved(remaining_ms=tuple(self.left(s, now_ms, s in running) for s in (0, 1)), since_ms=None)

    def vacation_started(self, seat: int, now_ms: int, days: int, until_ms: int, running: bool) -> DaysClock:
        """`seat` goes on vacation at `now_ms` until `until_ms`: if its time runs, it is charged up to
        now and runs again from `until_ms`."""
        changes: dict[str, Any] = {
            "vacation_days_left": _with(self.vacation_days_left, seat, self.vacation_days_left[seat] - days),
            "vacation_until_ms": _with(self.vacation_until_ms, seat, until_ms),
        }
        if running:
            changes["remaining_ms"] = _with(self.remaining_ms, seat, self.left(seat, now_ms, running=True))
            changes["since_ms"] = until_ms
        return self.evolved(**changes)

    def vacation_ended(self, seat: int, now_ms: int, days_back: int, running: bool) -> DaysClock:
        """`seat` is back at `now_ms`: `days_back` days return to its allowance; its time runs again
        from now if it is to move."""
        changes: dict[str, Any] = {
            "vacation_days_left": _with(self.vacation_days_left, seat, self.vacation_days_left[seat] + days_back),
            "vacation_until_ms": _with(self.vacation_until_ms, seat, None),
        }
        if running:
            changes["since_ms"] = now_ms
        return self.evolved(**changes)

    def view(self, to_move: tuple[int, ...]) -> dict[str, Any]:
        deadline = None
        if self.since_ms is not None and to_move:
            deadline = self.since_ms + min(self.remaining_ms[seat] for seat in to_move)
        return {
            "kind": "correspondence",
            "days_per_move": self.days_per_move,
            "remaining_ms": list(self.remaining_ms),
            "since_ms": self.since_ms,
            "deadline_ms": deadline,
            "vacation_days_left": list(self.vacation_days_left),
            "vacation_until_ms": list(self.vacation_until_ms),
        }


T = TypeVar("T")


def _with(pair: tuple[T, T], seat: int, value: T) -> tuple[T, T]:
    return (value, pair[1]) if seat == 0 else (pair[0], value)


AnyClockState = FischerClock | DaysClock


def new_clock(clock: dict[str, Any]) -> AnyClockState:
    """The clock a `match_created` event's `clock` describes."""
    return DaysClock.new(clock) if clock.get("kind") == "correspondence" else FischerClock.new(clock)
