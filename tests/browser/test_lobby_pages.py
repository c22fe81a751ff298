"""The lobby's seeks, "my games" and the player page in a real browser against the real stack
with the matchmaker: a seek posted from one page is accepted from another (live, over SSE), the
match waits for its first move in that player's "my games" (the count in the title), and once the
match is over and rated, the player page draws the rating graph."""

from __future__ import annotations

import pytest

from tests.e2e.gateway_stack import auth, running_stack

from .conftest import PARTITIONS, screenshot
from .test_web_client import player_id

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture(scope="module")
def web_stack(kafka_bootstrap, redis_url, tmp_path_factory):
    """This module's stack: the browser tests' one (bots included), with the matchmaker."""
    with running_stack(
        kafka_bootstrap,
        redis_url,
        tmp_path_factory.mktemp("web-lobby"),
        "lobbyweb",
        PARTITIONS,
        bots=True,  # a pool entry may let a bot take the other seat
        matchmaker=True,
        PLYLOG_RATE_PER_S="200",
        PLYLOG_RATE_BURST="200",
        PLYLOG_SSE_KEEPALIVE_S="2",
    ) as running:
        yield running


def _token(page) -> str:
    return page.evaluate("JSON.parse(localStorage.getItem('plylog.identity')).token")


def test_a_seek_accepted_from_the_lobby_then_my_games_and_the_rating_graph(new_page, web_stack):
    ann, ben = new_page("ann"), new_page("ben")
    ann_id, ben_id = player_id(ann), player_id(ben)
    ann.select_option("#seek-game", "strands")
    ann.select_option("#seek-days", "1")
    ann.click("#seek-button")
    ann.wait_for_selector(".messages:has-text('Your seek is open')")
    ben.goto("/")
    ben.wait_for_selector(f"#list-seeks tr:has-text('{ann_id}') [data-accept]")  # arrived live
    ben.wait_for_selector(f"#list-seeks tr:has-text('ann ({ann_id})')")  # by the name her profile gives
    screenshot(ben, "lobby-seeks")
    ben.click(f"#list-seeks tr:has-text('{ann_id}') [data-accept]")
    ben.wait_for_url("**/match.html?id=*")
    match_id = ben.url.split("id=")[1]
    view = web_stack.view(match_id)
    assert sorted(view["seats"]) == sorted([ann_id, ben_id]) and view["clock"]["kind"] == "correspondence"

    to_move = view["seats"][view["to_move"][0]]
    waiting_page = ann if to_move == ann_id else ben
    waiting_page.goto("/games.html")
    row = waiting_page.wait_for_selector(f"#my-games tr[data-match='{match_id}'][data-your-move='true']")
    assert "days left" in row.inner_text()
    waiting_page.wait_for_function("document.title.startsWith('(1)')")
    screenshot(waiting_page, "my-games")

    # the player to move resigns: a rated outcome, so both players get a rating history
    headers = auth(_token(waiting_page))
    seat_token = web_stack.http.get(f"/v1/matches/{match_id}/tokens", headers=headers).json()["tokens"]
    token = next(t for t in seat_token if t)
    answer = web_stack.http.post(
        f"/v1/matches/{match_id}/actions",
        json={"action": {"type": "resign"}},
        headers=auth(token),
        params={"wait": "true"},
    )
    assert answer.status_code == 200 and answer.json()["status"] == "accepted", answer.text
    ann.goto(f"/player.html?id={ann_id}")
    for _ in range(30):  # the projector applies the outcome a moment after the result
        if ann.query_selector("svg.rating-graph circle"):
            break
        ann.wait_for_timeout(500)
        ann.reload()
    graph = ann.wait_for_selector("svg.rating-graph[data-game='strands']")
    assert "1 rated matches" in graph.text_content()
    ann.wait_for_selector(f"#recent tr:has-text('{ben_id}')")
    screenshot(ann, "player-page")


def test_a_pool_player_who_allows_the_computer_gets_it_after_the_wait(new_page, web_stack):
    carl = new_page("carl")
    carl_id = player_id(carl)
    carl.select_option("#seek-game", "strands")
    carl.select_option("#pool-bot-after", "5")
    carl.click("#pool-button")
    carl.wait_for_selector(".messages:has-text('You wait in the pool')")
    carl.wait_for_selector("#list-pools li:has-text('1 waiting')")  # live
    carl.wait_for_selector(f"#list-pools li:has-text('carl ({carl_id})')")  # named
    carl.goto("/games.html")
    carl.wait_for_selector("#my-games tr:has-text('bot:')", timeout=60_000)  # the matchmaker's tick seated it
