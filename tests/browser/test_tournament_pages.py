"""The tournament pages in Chromium, on the real stack with the bot and tournament services: a
person registers from the lobby, sees their pairing on the tournament page (live), opens the match
from it, plays it by clicking to its end, and sees the standings change."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.gateway_stack import auth, running_stack

from .conftest import PARTITIONS
from .test_web_client import YOUR_MOVE_SHOWN_OR_GAME_OVER

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def web_stack(kafka_bootstrap, redis_url, tmp_path_factory):
    with running_stack(
        kafka_bootstrap,
        redis_url,
        tmp_path_factory.mktemp("web-tournaments"),
        "web",
        PARTITIONS,
        bots=True,
        tournaments=True,
        PLYLOG_RATE_PER_S="200",
        PLYLOG_RATE_BURST="200",
    ) as running:
        yield running


def test_register_from_the_lobby_see_the_pairing_open_the_match_and_the_standings_change(new_page, web_stack):
    director = web_stack.http.post("/v1/players", json={"name": "director"}).json()["token"]
    starts = (datetime.now(UTC) + timedelta(minutes=10)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    created = web_stack.http.post(
        "/v1/tournaments",
        headers=auth(director),
        json={
            "name": "Pia's cup",
            "format": "knockout",
            "game": "strands",
            "options": {"layout": "small-4"},
            "clock": {"initial_s": 600},
            "starts_at": starts,
            "bots_allowed": True,
        },
    )
    assert created.status_code == 201, created.text
    tid = created.json()["tournament_id"]
    bot = web_stack.http.post(
        f"/v1/tournaments/{tid}/register", headers=auth(director), json={"player": "bot:random~1"}
    )
    assert bot.status_code == 200, bot.text

    page = new_page("pia")
    page.goto("/")
    page.click(f"[data-enter='{tid}']")
    page.wait_for_selector(".messages :text('You are entered')")
    page.goto(f"/tournament.html?id={tid}")
    page.wait_for_selector("#standings tr:has-text('pia')")  # "pia (g~...)": her profile's name
    before = page.inner_text("#standings tbody")
    assert web_stack.http.post(f"/v1/tournaments/{tid}/start", headers=auth(director)).status_code == 200
    page.wait_for_selector("#pairings tr[data-match] a", timeout=30_000)  # live: the page was not reloaded
    assert "pia" in page.inner_text("#pairings")
    page.click("#pairings tr[data-match] a")
    page.wait_for_url("**/match.html?id=*")
    match_id = page.url.split("id=")[1]
    while True:
        page.wait_for_function(YOUR_MOVE_SHOWN_OR_GAME_OVER, timeout=60_000)
        if page.locator("#status:has-text('Game over')").count():
            break
        raw = page.get_attribute("body", "data-legal-seq")
        if not raw:  # the page fetched its seat tokens (opened from the tournament page) and drew again
            continue
        seq = int(raw)
        page.locator("svg.board .cell.legal").first.click()
        page.click("#place")
        deadline = time.monotonic() + 30
        while web_stack.view(match_id)["seq"] == seq:
            assert time.monotonic() < deadline, page.inner_text(".messages")
            time.sleep(0.1)
    page.goto(f"/tournament.html?id={tid}")
    page.wait_for_selector("#summary:has-text('over')", timeout=30_000)
    after = page.inner_text("#standings tbody")
    assert after != before and "won by" in page.inner_text("#summary")
