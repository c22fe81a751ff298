"""The CLI's side of correspondence clocks: `--clock 3d` (of `plylog new` and `plylog tournament
create`), the vacation words at the `plylog play` prompt, and the "days left" line of `plylog show`
and `plylog play`, from a real folded view."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from games.clocks import DAY_MS
from services.cli._clock import days_left_line, parse_clock
from services.cli._errors import CliError
from services.cli._moves import parse
from services.cli.tournament_cmd import app as tournament_app
from services.cli.tournament_cmd import create_extras
from tests.support import T0_MS, Match

HOUR_MS = 3_600_000
START = T0_MS + 1000


def test_clock_option_takes_fischer_seconds_or_days_per_move():
    assert parse_clock("300+5") == {"initial_s": 300.0, "increment_s": 5.0}
    assert parse_clock("3d") == {"kind": "correspondence", "days_per_move": 3}
    assert parse_clock("14D", vacation_days=10) == {"kind": "correspondence", "days_per_move": 14, "vacation_days": 10}
    assert parse_clock(None) is None
    for bad, args in (("xd", ()), ("fast", ()), ("300", (5,)), (None, (5,))):
        with pytest.raises(CliError):
            parse_clock(bad, *args)


def test_tournament_create_reads_clock_as_plylog_new_does():
    """`plylog tournament create --clock 3d` used to crash (float("3d")); it takes both kinds now."""
    assert create_extras(None, None, "3d") == {"clock": {"kind": "correspondence", "days_per_move": 3}}
    assert create_extras(3, None, "300+2") == {"rounds": 3, "clock": {"initial_s": 300.0, "increment_s": 2.0}}
    assert create_extras(None, 120, "60") == {"duration_s": 120, "clock": {"initial_s": 60.0, "increment_s": 0.0}}
    assert create_extras(None, None, None) == {}


def test_tournament_create_says_what_a_clock_looks_like_for_junk_before_calling_anyone():
    for junk in ("fast", "3 days", "xd"):
        done = CliRunner().invoke(tournament_app, ["create", "Cup", "--clock", junk])
        assert isinstance(done.exception, CliError), done.exception
        assert "--clock" in done.exception.cause and "3d" in done.exception.hint


def test_the_prompt_knows_vacation_words():
    assert parse("strands", "vacation 3") == {"type": "vacation", "days": 3}
    assert parse("mana", "back") == {"type": "end_vacation"}
    with pytest.raises(ValueError, match="vacation DAYS"):
        parse("strands", "vacation")


def _view() -> dict:
    match = Match()
    clock = {"kind": "correspondence", "days_per_move": 3, "vacation_days": 4}
    match.create("strands", {"layout": "small-4"}, clock=clock)
    match.ok("bob", {"type": "vacation", "days": 2}, advance_ms=HOUR_MS)
    return match.view


def test_days_left_names_the_seat_to_move_its_time_and_who_is_away():
    view = _view()
    line = days_left_line(view, START + DAY_MS + 2 * HOUR_MS)
    assert line == (
        "correspondence, 3 days per move · alice (seat 0) to move: 1 day 22 h left (1.9 days, until "
        "2026-12-02 22:00 UTC) · bob (seat 1) is on vacation until 2026-12-01 23:00 UTC · vacation days left: 4 and 2"
    )
    assert "time is up" in days_left_line(view, START + 3 * DAY_MS)
    assert days_left_line({**view, "clock": {"initial_ms": 1, "increment_ms": 0}}, 0) is None
    assert days_left_line(None, 0) is None
