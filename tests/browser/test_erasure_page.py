"""The web client after an erasure (docs/personal-data.md): a spectator's match page shows a seated
guest by the name of their profile, and after the operator erases them by "erased player", the
name nowhere in the page or in what the page received."""

from __future__ import annotations

import secrets

import pytest

from tests.e2e.gateway_stack import operator

from .test_web_client import create_from_lobby, player_id

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def test_a_spectator_sees_the_name_then_erased_player(new_page, web_stack):
    name = f"Quillon{secrets.token_hex(3)}"
    player_page = new_page(name)
    player = player_id(player_page)
    match_id = create_from_lobby(player_page, "strands")

    watcher = new_page("watcher")
    watcher.goto(f"/match.html?id={match_id}")
    watcher.wait_for_selector(f".seats li:has-text('{name}')")
    assert player in watcher.inner_text(".seats")

    answer = web_stack.http.post(f"/v1/players/{player}/erase", headers=operator())
    assert answer.status_code == 200 and answer.json()["name"] == "erased player", answer.text

    spectator = new_page("spectator")
    spectator.goto(f"/match.html?id={match_id}")
    spectator.wait_for_selector(".seats li:has-text('erased player')")
    received = "".join(e["text"] for e in spectator.evaluate("window.__plylogNetwork || []"))
    assert name.lower() not in spectator.content().lower() and name.lower() not in received.lower()
    assert player in spectator.inner_text(".seats")  # the id stays, as views keep it
