"""The web client on the seat socket, in a real browser against the real stack: a seated player's
moves go out and their results come back over its WebSocket (no POST), the other seat's move
arrives on the other page's socket, a spectator follows the SSE stream, and a page whose socket
cannot open plays over SSE + POST instead."""

from __future__ import annotations

import orjson
import pytest

from .conftest import SOCKET_FRAMES, screenshot
from .test_web_client import WORKED_GAME, WORKED_LAYOUT, cell, create_from_lobby, join_by_link, wait_my_turn

pytestmark = [pytest.mark.integration, pytest.mark.browser]

# A WebSocket that can never open (port 9, discard, is closed): the page must fall back.
BROKEN_SOCKETS = """
(() => {
  const Real = window.WebSocket;
  window.WebSocket = function (url, protocols) { return new Real("ws://127.0.0.1:9/", protocols); };
  window.WebSocket.prototype = Real.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
})();
"""


def custom_layout(page) -> None:
    page.select_option("#strands-layout", "custom")
    page.fill("#strands-side", "2")
    page.fill("#strands-rows", "\n".join(WORKED_LAYOUT["rows"]))


def action_posts(page) -> list[str]:
    """Every `POST .../actions` the page makes from now on (the list fills as it does)."""
    posts: list[str] = []
    page.on(
        "request",
        lambda request: posts.append(request.url) if request.method == "POST" and "/actions" in request.url else None,
    )
    return posts


def frames(page, direction: str) -> list[dict]:
    return [orjson.loads(payload) for _, way, payload in SOCKET_FRAMES.get(page, []) if way == direction]


def place(page, cells) -> None:
    wait_my_turn(page)
    for q, r in cells:
        cell(page, f"{q},{r}").click()
    page.click("#place")


def test_moves_go_over_the_seat_socket_and_a_spectator_follows_the_stream(new_page, web_stack):
    black, white, watcher = new_page("sara"), new_page("tom"), new_page("uma")
    posts = {page: action_posts(page) for page in (black, white)}
    match_id = create_from_lobby(black, "strands", white, custom_layout)
    join_by_link(white, black.input_value(".seat-link"))
    for page in (black, white):
        page.wait_for_selector('body[data-transport="socket"]')
        page.wait_for_selector('.live-state[data-state="live"]')
    watcher.goto(f"/match.html?id={match_id}")
    watcher.wait_for_selector('body[data-transport="sse"]')

    place(black, WORKED_GAME[0])
    white.wait_for_selector('svg.board [data-key="1,0"].stone-black')
    watcher.wait_for_selector('svg.board [data-key="1,0"].stone-black')
    place(white, WORKED_GAME[1])
    black.wait_for_selector('svg.board [data-key="-1,1"].stone-white')
    watcher.wait_for_selector('svg.board [data-key="-1,1"].stone-white')
    screenshot(black, "seat-socket-black")

    # Black's move went out on its socket and came back as its `result`; White's page got it as an update.
    sent = [f for f in frames(black, "sent") if "action" in f]
    assert [f["action"] for f in sent] == [{"type": "place", "cells": WORKED_GAME[0]}]
    assert sent[0]["event_id"].startswith("w-")
    answer = [f for f in frames(black, "received") if f["type"] == "result"]
    assert [(f["event_id"], f["status"], f["seq"]) for f in answer] == [
        (sent[0]["event_id"], "accepted", sent[0]["expected_seq"] + 1)
    ]
    told = [f for f in frames(white, "received") if f["type"] == "update" and f.get("status") == "accepted"]
    assert sent[0]["event_id"] in [f["event_id"] for f in told]
    assert [f["action"] for f in frames(white, "sent") if "action" in f] == [{"type": "place", "cells": WORKED_GAME[1]}]
    assert posts[black] == [] and posts[white] == []  # no action went over HTTP
    assert SOCKET_FRAMES.get(watcher, []) == []  # the spectator has no socket
    newest = black.locator("#log li").first  # its moves list has both moves, from the socket
    assert newest.get_attribute("value") == str(web_stack.view(match_id)["seq"]) == str(sent[0]["expected_seq"] + 2)


def test_a_page_whose_socket_cannot_open_plays_over_the_stream_and_post(new_page, web_stack):
    black, white = new_page("vera"), new_page("will")
    black.context.add_init_script(BROKEN_SOCKETS)
    posts = action_posts(black)
    create_from_lobby(black, "strands", white, custom_layout)
    join_by_link(white, black.input_value(".seat-link"))
    black.wait_for_selector('body[data-transport="sse"]')
    black.wait_for_selector('.live-state[data-state="live"]')
    white.wait_for_selector('body[data-transport="socket"]')

    place(black, WORKED_GAME[0])
    white.wait_for_selector('svg.board [data-key="1,0"].stone-black')
    place(white, WORKED_GAME[1])
    black.wait_for_selector('svg.board [data-key="-1,1"].stone-white')  # White's move, over SSE
    assert len(posts) == 1 and posts[0].endswith("/actions?wait=true")
    assert [f for f in frames(black, "sent") if "action" in f] == []
    assert [f["action"] for f in frames(white, "sent") if "action" in f] == [{"type": "place", "cells": WORKED_GAME[1]}]
