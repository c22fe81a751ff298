"""Correspondence clocks through the real rules worker, projector and gateway (its timekeeper), on
the real broker and Redis. The move records are written with `at` days in the past, so the days run
out without waiting: the projector lists each match's deadline from its view, and the timekeeper ends
the matches whose deadline passed (also one whose seat ran out after a vacation) and leaves alone the
one whose seat to move is on vacation."""

from __future__ import annotations

import re
import time

import pytest
from typer.testing import CliRunner

from games.clocks import DAY_MS
from services.cli.main import app
from tests.e2e.gateway_stack import operator, running_stack
from tests.support import record

from .harness import produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
HOUR_MS = 3_600_000
CREATE = {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": {"layout": "small-4"}}
ONE_DAY = {"kind": "correspondence", "days_per_move": 1, "vacation_days": 7}


def _records(now_ms: int) -> list[tuple[bytes, bytes]]:
    days_ago = lambda days: now_ms - round(days * DAY_MS)  # noqa: E731 - a unit, read like one
    matches = {
        # alice moved 2.5 days ago; bob had 1 day: his time ran out 1.5 days ago.
        "corr-late": [
            ("alice", {**CREATE, "clock": ONE_DAY}, days_ago(3)),
            ("alice", {"type": "place", "cells": [[0, -2]]}, days_ago(2.5)),
        ],
        # alice, to move, went on vacation for 1 day after 2.4 h: her clock ran again from 4.9 days
        # ago, with 0.9 days: it ran out 4 days ago.
        "corr-back": [
            ("alice", {**CREATE, "clock": ONE_DAY}, days_ago(6)),
            ("alice", {"type": "vacation", "days": 1}, days_ago(5.9)),
        ],
        # alice, to move, is on vacation for 5 days from 2 days ago: her deadline is 3 days ahead
        # plus what she had left.
        "corr-away": [
            ("alice", {**CREATE, "clock": ONE_DAY}, days_ago(2.5)),
            ("alice", {"type": "vacation", "days": 5}, days_ago(2)),
        ],
    }
    return [
        (match_id.encode(), record(match_id, player, action, n, at_ms=at_ms))
        for match_id, actions in matches.items()
        for n, (player, action, at_ms) in enumerate(actions)
    ]


def _poll(fetch, condition, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if condition(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; last value: {value}")
        time.sleep(0.3)


def test_the_timekeeper_ends_correspondence_matches_whose_days_ran_out(kafka_bootstrap, redis_url, tmp_path):
    with running_stack(kafka_bootstrap, redis_url, tmp_path, "corr", 2, PLYLOG_TIMEKEEPER_INTERVAL_S="0.2") as stack:
        now_ms = int(time.time() * 1000)
        produce(kafka_bootstrap, stack.topics.moves, _records(now_ms))

        def view(match_id: str) -> dict | None:
            answer = stack.http.get(f"/v1/matches/{match_id}")
            return answer.json() if answer.status_code == 200 else None

        for match_id, winner in (("corr-late", 0), ("corr-back", 1)):
            final = _poll(lambda m=match_id: view(m), lambda v: v is not None and v["status"] == "over")
            assert final["outcome"]["winner"] == winner and final["outcome"]["reason"] == "timeout", final
            last = stack.http.get(f"/v1/matches/{match_id}/events").json()["results"][-1]
            assert last["player"] == "plylog-timekeeper"
        assert view("corr-back")["clock"]["remaining_ms"][0] <= 0

        away = _poll(lambda: view("corr-away"), lambda v: v is not None and v["seq"] == 2)
        until = now_ms - 2 * DAY_MS + 5 * DAY_MS
        clock = away["clock"]
        assert clock["vacation_until_ms"] == [until, None] and clock["since_ms"] == until
        assert clock["deadline_ms"] == until + DAY_MS - (DAY_MS // 2)  # half a day spent before the vacation
        client, keys = stack.redis(), stack.keys
        assert client.zscore(keys.deadlines(keys.home("corr-away")), "corr-away") == clock["deadline_ms"]
        assert away["status"] == "active"  # listed, but not due: the timekeeper left it alone
        shown = CliRunner().invoke(app, ["show", "corr-away"], env={"PLYLOG_GATEWAY_URL": stack.url})
        assert shown.exit_code == 0, shown.output
        assert re.search(
            r"correspondence, 1 day per move · alice \(seat 0\) to move: 3 days 1[12] h left", shown.output
        )
        assert "alice (seat 0) is on vacation until" in shown.output

        # Over HTTP: a new correspondence match is listed with its deadline a day from its start.
        created = stack.http.post(
            "/v1/matches",
            headers=operator(),
            json={"game": "strands", "seats": ["carol", "dave"], "options": {"layout": "small-4"}, "clock": ONE_DAY},
        )
        assert created.status_code in (200, 201), created.text
        match_id = created.json()["match_id"]
        fresh = _poll(lambda: view(match_id), lambda v: v is not None)
        assert fresh["clock"]["deadline_ms"] == fresh["clock"]["since_ms"] + DAY_MS
        _poll(lambda: client.zscore(keys.deadlines(keys.home(match_id)), match_id), lambda s: s is not None)
        assert client.zscore(keys.deadlines(keys.home(match_id)), match_id) == fresh["clock"]["deadline_ms"]
