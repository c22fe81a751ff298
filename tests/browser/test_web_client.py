"""The web client in a real browser (Debian's Chromium via Playwright) against the real stack:
people play all four games by clicking, watch live (surviving a gateway restart), replay, and
read the leaderboards. Screenshots of every page land in tests/browser/screenshots/.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time

import orjson
import pytest

from games.mastermind import commitment_of
from services.gateway.submit import move_record
from tests.e2e.gateway_stack import operator
from tests.integration.harness import produce

from .conftest import SOCKET_FRAMES, screenshot

pytestmark = [pytest.mark.integration, pytest.mark.browser]

WORKED_LAYOUT = {"side": 2, "rows": ["22", "212", "22"]}  # docs/rules/strands.md, "A worked game"
WORKED_GAME = [[[1, 0]], [[0, -1], [-1, 1]], [[0, 0]], [[1, -1], [-1, 0]], [[0, 1]]]  # White wins [4] vs [3]

BOARD_OF_PAGE = """() => [...document.querySelectorAll('svg.board [data-key]')].map((g) =>
  g.classList.contains('stone-black') ? 'B' : g.classList.contains('stone-white') ? 'W' :
  g.classList.contains('stone-red') ? 'R' : g.classList.contains('stone-blue') ? 'B' : '.').join('')"""


def cell(page, key: str):
    return page.locator(f'svg.board [data-key="{key}"]')


def wait_my_turn(page) -> None:
    page.wait_for_selector("#status:has-text('Your move')")


def player_id(page) -> str:
    """The page's guest identity (the gateway makes it when a page first opens)."""
    if page.url == "about:blank":
        page.goto("/")
    page.wait_for_function("document.getElementById('player-id').textContent.includes('~')")
    return page.inner_text("#player-id")


def create_from_lobby(page, game: str, opponent=None, fill=None) -> str:
    """Creates a match from the lobby form against `opponent` (a page: its player is invited by
    id) or an open seat; returns its id (the page is then on the match page)."""
    invitee = player_id(opponent) if opponent is not None else None
    page.goto("/")
    page.select_option("#create-game", game)
    if fill:
        fill(page)
    if invitee:
        page.fill("#create-opponent", invitee)
    page.click("#create-button")
    page.wait_for_url("**/match.html?id=*")
    page.wait_for_selector("#status")
    return page.url.split("id=")[1]


def join_by_link(page, link: str) -> None:
    """The invited player opens the match link they were sent and takes the seat kept for them."""
    page.goto(link)
    page.wait_for_selector("#join:has-text('kept for you')")
    page.click("#join")
    page.wait_for_selector(".seats .badge:has-text('you')")


def error_text(page) -> str:
    page.wait_for_selector(".messages .msg.error")
    return page.inner_text(".messages")


# --- Strands: a full match by clicking, a rejection, keyboard play, resume after a lost connection
def test_strands_full_match_by_clicking_with_resume_and_leaderboard(new_page, web_stack):
    alice, bob = new_page("alice"), new_page("bob")
    alice.goto("/")
    screenshot(alice, "lobby")

    def custom_layout(page):
        page.select_option("#strands-layout", "custom")
        page.fill("#strands-side", "2")
        page.fill("#strands-rows", "\n".join(WORKED_LAYOUT["rows"]))

    match_id = create_from_lobby(alice, "strands", bob, custom_layout)
    link = alice.input_value(".seat-link")
    assert link.endswith(f"match.html?id={match_id}") and "token" not in link
    join_by_link(bob, link)
    assert bob.locator('.seats li[data-seat="1"] .badge').inner_text() == "you"
    assert alice.locator('.seats li[data-seat="0"] .badge').inner_text() == "you"

    # The opening: the six 2s are the legal targets, the 1 is not.
    wait_my_turn(alice)
    assert alice.locator("svg.board .cell.legal").count() == 6
    assert "legal" not in cell(alice, "0,0").get_attribute("class")
    # A selection the rules forbid is sent anyway and the service's reason is shown.
    cell(alice, "1,0").click()
    cell(alice, "0,0").click()
    alice.click("#place")
    assert "same number" in error_text(alice)
    screenshot(alice, "strands-rejected")
    alice.click("text=Clear")

    # Black's opening by keyboard: arrow from the centre to [1,0], Enter selects, Enter on Place.
    cell(alice, "0,0").focus()
    alice.keyboard.press("ArrowRight")
    assert alice.evaluate("document.activeElement.dataset.key") == "1,0"
    alice.keyboard.press("Enter")
    assert "selected" in cell(alice, "1,0").get_attribute("class")
    alice.focus("#place")
    alice.keyboard.press("Enter")
    bob.wait_for_selector('svg.board [data-key="1,0"].stone-black')

    play = {0: alice, 1: bob}
    wait_my_turn(bob)
    for q, r in WORKED_GAME[1]:
        cell(bob, f"{q},{r}").click()
    screenshot(bob, "strands-selecting")
    bob.click("#place")
    alice.wait_for_selector('svg.board [data-key="-1,1"].stone-white')

    # The gateway dies; a move reaches the log meanwhile; the pages resume from Last-Event-ID.
    black_player = web_stack.view(match_id)["seats"][0]
    web_stack.gateway.kill()
    bob.wait_for_selector('.live-state[data-state="reconnecting"]')
    record = move_record(match_id, black_player, {"type": "place", "cells": WORKED_GAME[2]})
    produce(web_stack.bootstrap, web_stack.topics.moves, [(match_id.encode(), orjson.dumps(record))])
    web_stack.restart_gateway()
    for page in (alice, bob):
        page.wait_for_selector('svg.board [data-key="0,0"].stone-black', timeout=30_000)
        page.wait_for_selector('.live-state[data-state="live"]')
    newest = bob.locator("#log li").first
    assert newest.get_attribute("value") == "5" and "black covers 1 cell(s) marked 1" in newest.inner_text()

    for turn in (3, 4):
        page = play[turn % 2]
        wait_my_turn(page)
        for q, r in WORKED_GAME[turn]:
            cell(page, f"{q},{r}").click()
        page.click("#place")
    for page, name in ((alice, "strands-over-black"), (bob, "strands-over-white")):
        page.wait_for_selector("#status:has-text('Game over')")
        assert f"White ({player_id(bob)}) wins" in page.inner_text("#status")
        assert page.evaluate(BOARD_OF_PAGE) == web_stack.view(match_id)["board"]
        screenshot(page, name)
    assert alice.inner_text("#groups-white") == "4" and alice.inner_text("#groups-black") == "3"

    # The leaderboards list the winner.
    alice.goto("/leaderboards.html?game=strands")
    alice.wait_for_selector("body[data-loaded]")
    # each player shown by the name of their profile, then their id (docs/personal-data.md)
    assert alice.locator("#lb-wins tbody tr").first.inner_text().split() == ["1", "bob", f"({player_id(bob)})", "1"]
    assert player_id(bob) in alice.inner_text("#lb-rating") and player_id(alice) in alice.inner_text("#lb-played")
    assert alice.locator("#activity svg.chart").count() == 2
    screenshot(alice, "leaderboards")


# --- Mastermind: a round played and scored; the secret never reaches another page early --------
def network_texts(page, responses) -> list[str]:
    """What reached the page: every recorded response body, the SSE streams and seat sockets included."""
    texts = [entry["text"] for entry in page.evaluate("window.__plylogNetwork || []")]
    texts += [payload for _, way, payload in SOCKET_FRAMES.get(page, []) if way == "received"]
    for response in responses:
        if "/stream" in response.url:
            continue
        with contextlib.suppress(Exception):  # bodies of pages navigated away from may be gone
            texts.append(response.text())
    return texts


def test_mastermind_round_is_played_and_scored_and_the_secret_stays_hidden(new_page, web_stack):
    maker, breaker, watcher = new_page("carol"), new_page("dave"), new_page("erin")
    seen = {page: [] for page in (maker, breaker, watcher)}
    for page, responses in seen.items():
        page.context.on("response", lambda response, into=responses: into.append(response))

    def small(page):
        page.click("#game-options summary")
        page.fill("#mm-pegs", "3")
        page.fill("#mm-colors", "4")
        page.fill("#mm-max-rows", "4")

    match_id = create_from_lobby(maker, "mastermind", None, small)
    # dave finds the open match in the lobby and joins it.
    breaker.goto("/")
    breaker.click(f'[data-join="{match_id}"]')
    breaker.wait_for_url("**/match.html?id=*")
    watcher.goto(f"/match.html?id={match_id}")
    watcher.wait_for_selector("#status")

    secret = [2, 0, 3]  # G R B
    maker.wait_for_selector("#mm-set-code")
    for colour in secret:
        maker.click(f'.palette [data-color="{colour}"]')
    maker.click("#mm-set-code")
    breaker.wait_for_selector("#mm-guess")
    salt = maker.evaluate(f"JSON.parse(localStorage.getItem('plylog.mm.{match_id}.1.1')).salt")
    assert re.fullmatch(r"[0-9a-f]{32}", salt)

    for guess in ([0, 1, 2], [3, 3, 3]):
        for colour in guess:
            breaker.click(f'.palette [data-color="{colour}"]')
        breaker.click("#mm-guess")
        watcher.wait_for_selector(f'.mm-row[data-row="{2 if guess[0] == 3 else 1}"] .keyinfo')
    breaker.wait_for_selector('.mm-row[data-row="2"]:has-text("1● 0○")')

    # Before the reveal: no page shows the secret, no page source holds it, no response carried it.
    secret_json = re.compile(r"\[\s*2\s*,\s*0\s*,\s*3\s*\]|\"203\"")
    secret_label = "green (G), red (R), blue (B)"
    watcher.wait_for_selector('.mm-row[data-row="2"]')
    for page in (maker, breaker, watcher):
        source = page.content()
        assert salt not in source and secret_label not in source, f"secret in the page of {page}"
        for text in network_texts(page, seen[page]):
            assert salt not in text, "the salt reached a browser before the reveal"
            assert not secret_json.search(text), "the secret code reached a browser before the reveal"
    screenshot(breaker, "mastermind-breaker")
    screenshot(watcher, "mastermind-watcher")
    # The codemaker sees its own code only when it asks.
    maker.click("text=Show my code")
    assert secret_label in maker.content()
    screenshot(maker, "mastermind-maker-own-code")
    maker.click("text=Hide my code")

    for colour in secret:
        breaker.click(f'.palette [data-color="{colour}"]')
    breaker.click("#mm-guess")
    for page in (maker, breaker, watcher):
        page.wait_for_selector(".mm-try:has-text('commitment verified')")
        assert "seat 1: 3" in page.inner_text("#mm-totals")
        assert secret_label in page.content()  # revealed now
    assert maker.inner_text("#mm-totals").startswith("seat 0: 0")
    screenshot(watcher, "mastermind-scored")
    # Round 2: the roles swap.
    breaker.wait_for_selector("#mm-set-code")
    assert "codemaker" in breaker.inner_text(".panel").lower()


def test_mastermind_manual_feedback_commitment_made_in_the_browser(new_page, web_stack):
    maker, breaker = new_page("mona"), new_page("nick")

    def manual(page):
        page.select_option("#mm-preset", "board-game")
        page.click("#game-options summary")
        page.fill("#mm-pegs", "2")
        page.fill("#mm-colors", "3")
        page.fill("#mm-max-rows", "3")

    match_id = create_from_lobby(maker, "mastermind", breaker, manual)
    join_by_link(breaker, maker.input_value(".seat-link"))

    # The page hashes with Web Crypto, or its own SHA-256 where there is none: both agree with Python.
    texts = ["", "abc", "x" * 200, f"MM1|{match_id}|1|1|1,2|00ff"]
    digests = maker.evaluate(
        """async (texts) => {
        const m = await import('/js/sha256.js');
        return Promise.all(texts.map(async (t) =>
            [await m.sha256Hex(t), m.sha256HexPlain(new TextEncoder().encode(t))]));
    }""",
        texts,
    )
    assert digests == [[hashlib.sha256(t.encode()).hexdigest()] * 2 for t in texts]

    maker.wait_for_selector("#mm-set-code:has-text('Commit')")
    for colour in (1, 2):
        maker.click(f'.palette [data-color="{colour}"]')
    maker.click("#mm-set-code")
    breaker.wait_for_selector("#mm-guess")
    salt = maker.evaluate(f"JSON.parse(localStorage.getItem('plylog.mm.{match_id}.1.1')).salt")
    assert web_stack.view(match_id)["commitment"] == commitment_of(match_id, 1, 1, "12", salt)

    for guess, answer in (([2, 1], ("0", "2")), ([1, 2], ("2", "0"))):
        for colour in guess:
            breaker.click(f'.palette [data-color="{colour}"]')
        breaker.click("#mm-guess")
        maker.wait_for_selector("#mm-feedback")
        assert (maker.input_value("#mm-black"), maker.input_value("#mm-white")) == answer  # prefilled, true
        screenshot(maker, "mastermind-manual-feedback")
        maker.click("#mm-feedback")
    maker.wait_for_selector("#mm-reveal")
    maker.click("#mm-reveal")
    for page in (maker, breaker):
        page.wait_for_selector(".mm-try:has-text('commitment verified')")
        assert "seat 1: 2" in page.inner_text("#mm-totals")


# --- Mana: the mana constraint is shown and a disobeying move is rejected with its reason ------
def test_mana_shows_the_mana_and_rejects_a_disobeying_move(new_page, web_stack):
    black, white = new_page("frank"), new_page("gina")
    create_from_lobby(black, "mana", white)
    join_by_link(white, black.input_value(".seat-link"))

    black.wait_for_selector(".cell.legal")
    assert sorted(black.locator("svg.board .cell.legal").evaluate_all("(gs) => gs.map((g) => g.dataset.key)")) == [
        "b1",
        "c1",
        "f1",
    ]
    screenshot(black, "mana-setup")
    cell(black, "c1").click()
    white.wait_for_selector(".cell.legal")
    cell(white, "c6").click()

    # Black: e1 -> d3 (e1 has 3 marks), then the bird on a3 (a 2-mark square like d3).
    black.wait_for_selector('svg.board [data-key="e1"].legal')
    assert black.locator("svg.board .cell.legal").count() == 6  # a1 b1 c1 d1 e1 f1 all can move
    cell(black, "e1").click()
    targets = black.locator("svg.board .cell.legal").evaluate_all("(gs) => gs.map((g) => g.dataset.key)")
    assert sorted(targets) == ["c2", "d3", "e4", "f3"]
    screenshot(black, "mana-targets")
    cell(black, "d3").click()
    black.wait_for_selector('svg.board [data-key="a3"].legal')
    cell(black, "a3").click()

    # White must obey mana 2: the page says so and outlines the pieces that may move.
    white.wait_for_selector('svg.board [data-key="b6"].legal')
    banner = white.inner_text("#mana-required")
    assert "2 (bird on a3)" in banner and "2 marks" in banner
    assert sorted(white.locator("svg.board .cell.legal").evaluate_all("(gs) => gs.map((g) => g.dataset.key)")) == [
        "b6",
        "c6",
        "f6",
    ]
    assert "bird" in cell(white, "a3").get_attribute("aria-label")
    cell(white, "a6").click()  # a 1-mark square: disobeying
    cell(white, "a5").click()
    message = error_text(white)
    assert "mana is 2" in message and "a6 has 1 mark" in message
    screenshot(white, "mana-rejected")

    # A legal move goes through: the first target of b6, then the first bird square offered.
    cell(white, "b6").click()
    white.locator("svg.board .cell.legal").first.click()
    white.locator("svg.board .cell.legal").first.click()
    black.wait_for_selector("#status:has-text('Your move')")
    assert "b6" in black.inner_text("#log")


# --- Mind Ninja: bidding, pattern, setup, roles, a free move declined; clocks count down --------
def test_mind_ninja_pregame_and_free_move_with_clocks(new_page, web_stack):
    first, second = new_page("hana"), new_page("ivan")

    def options(page):
        page.fill("#mn-side", "4")
        page.check("#clock-on")
        page.fill("#clock-minutes", "5")
        page.fill("#clock-increment", "2")

    create_from_lobby(first, "mind_ninja", second, options)
    join_by_link(second, first.input_value(".seat-link"))

    # Clocks: seat 0's runs, seat 1's stands.
    clock = lambda page, seat: page.inner_text(f'.clock[data-seat="{seat}"]')  # noqa: E731 - a one-line helper
    before = (clock(second, 0), clock(second, 1))
    deadline = time.monotonic() + 15  # a second's tick, however busy the machine
    while clock(second, 0) >= before[0] and time.monotonic() < deadline:
        time.sleep(0.2)
    after = (clock(second, 0), clock(second, 1))
    assert after[1] == before[1] == "5:00" and after[0] < before[0], (before, after)

    # Bidding: 2, a bid of 2 again is refused, 3, then a pass (hana: chooser with 3 free moves).
    first.wait_for_selector("#mn-bid-button")
    first.fill("#mn-bid", "2")
    first.click("#mn-bid-button")
    second.wait_for_selector("#mn-bid-button")
    second.fill("#mn-bid", "2")
    second.click("#mn-bid-button")
    assert "must exceed the current bid of 2" in error_text(second)
    screenshot(second, "mind-ninja-bidding")
    second.fill("#mn-bid", "3")
    second.click("#mn-bid-button")
    first.wait_for_selector("#mn-pass")
    first.wait_for_selector("dd:has-text('seat 1: 3')")
    first.click("#mn-pass")

    # Pattern: ivan, the inventor, picks from the catalogue (every id offered).
    second.wait_for_selector("#mn-choose-pattern")
    ids = second.locator('input[name="mn-pattern"]').evaluate_all("(xs) => xs.map((x) => x.value)")
    assert ids == [
        "five_in_a_row",
        "havannah",
        "hex",
        "y",
        "ring",
        "big_group",
        "triangle",
        "flower",
        "odd",
        "equicolored",
    ]
    screenshot(second, "mind-ninja-pattern")
    second.check('input[name="mn-pattern"][value="five_in_a_row"]')
    second.click("#mn-choose-pattern")

    # Setup: a red and a blue stone by clicking, then the end of the setup.
    second.wait_for_selector("#mn-end-setup")
    cell(second, "0,0").click()
    second.wait_for_selector('svg.board [data-key="0,0"].stone-red')
    second.check('input[name="mn-colour"][value="blue"]')
    cell(second, "1,0").click()
    second.wait_for_selector('svg.board [data-key="1,0"].stone-blue')
    screenshot(second, "mind-ninja-setup")
    second.click("#mn-end-setup")

    # Roles: hana, the chooser, blocks; ivan builds (red).
    first.wait_for_selector("#mn-blocker")
    screenshot(first, "mind-ninja-roles")
    first.click("#mn-blocker")
    second.wait_for_selector('svg.board [data-key="-1,0"].legal')
    assert f"seat 1 ({player_id(second)}), places red" in second.inner_text(".panel")
    cell(second, "-1,0").click()
    first.wait_for_selector('svg.board [data-key="2,0"].legal')
    cell(first, "2,0").click()
    # The chooser's free move: offered after its own placement, declined here.
    first.wait_for_selector("#mn-decline")
    assert "3 left" in first.inner_text("#mn-free")
    screenshot(first, "mind-ninja-free-move")
    first.click("#mn-decline")
    second.wait_for_selector("#status:has-text('Your move')")
    assert "2 free move(s) left" in first.inner_text(".panel")
    assert first.evaluate(BOARD_OF_PAGE) == web_stack.view(first.url.split("id=")[1])["board"]


# --- Replay: every earlier position of a running match, by slider, keys and buttons -------------
def test_replay_slider_shows_each_earlier_position(new_page, web_stack):
    http = web_stack.http
    created = http.post(
        "/v1/matches",
        json={"game": "strands", "seats": ["kim", "lee"], "options": {"layout": WORKED_LAYOUT}},
        headers=operator(),
    ).json()
    match_id, tokens = created["match_id"], created["tokens"]

    def move(turn: int) -> None:
        answer = http.post(
            f"/v1/matches/{match_id}/actions?wait=true",
            headers={"Authorization": f"Bearer {tokens[turn % 2]}"},
            json={"action": {"type": "place", "cells": WORKED_GAME[turn]}},
        ).json()
        assert answer["status"] == "accepted", answer

    for turn in range(3):
        move(turn)
    boards = {seq: http.get(f"/v1/matches/{match_id}/positions/{seq}").json()["board"] for seq in range(1, 5)}
    assert len(set(boards.values())) == 4

    page = new_page("viewer")
    page.goto(f"/replay.html?id={match_id}")
    page.wait_for_selector('body[data-shown-seq="4"]')
    assert page.evaluate(BOARD_OF_PAGE) == boards[4]

    def shown(seq: int) -> str:
        page.wait_for_selector(f'body[data-shown-seq="{seq}"]')
        assert page.inner_text("#replay-seq") == f"position {seq} of {page.get_attribute('#replay-slider', 'max')}"
        return page.evaluate(BOARD_OF_PAGE)

    page.focus("#replay-slider")  # the slider by keyboard
    page.keyboard.press("Home")
    assert shown(1) == boards[1]
    for seq in (2, 3, 4):
        page.keyboard.press("ArrowRight")
        assert shown(seq) == boards[seq]
    for seq in (3, 2, 1):
        page.click("#replay-prev")
        assert shown(seq) == boards[seq]
    page.click("#replay-last")
    assert shown(4) == boards[4]
    page.click("#replay-first")
    assert shown(1) == boards[1]
    page.locator("#replay-slider").fill("3")
    assert shown(3) == boards[3]
    screenshot(page, "replay")

    # The match goes on: the replay follows it when it stands at the last position.
    page.click("#replay-last")
    shown(4)
    move(3)
    page.wait_for_selector('body[data-shown-seq="5"]')
    assert page.evaluate(BOARD_OF_PAGE) == web_stack.view(match_id)["board"]


# --- Against the computer: a Strands match by clicking, to its end ----------------------------------
YOUR_MOVE_SHOWN_OR_GAME_OVER = """() => {
  const status = document.getElementById("status"), body = document.body.dataset;
  if (status && status.textContent.includes("Game over")) return true;
  return Boolean(body.legalSeq) && body.legalSeq === body.seq;  // legal targets are fetched on our turn only
}"""


def test_a_strands_match_against_the_computer_is_played_by_clicking_to_its_end(new_page, web_stack):
    page = new_page("pia")
    page.goto("/")
    page.wait_for_selector("#create-bot option[value='bot:mcts-1']", state="attached")
    page.select_option("#create-bot", "bot:mcts-1")
    page.select_option("#strands-layout", "small-4")
    page.click("#create-button")
    page.wait_for_url("**/match.html?id=*")
    page.wait_for_selector(".seats .badge.bot")
    match_id, moves = page.url.split("id=")[1], 0
    while True:
        # The page's own position, not Redis's: right after our move is applied in Redis the page may
        # still show the position before it, with "Your move" on it.
        page.wait_for_function(YOUR_MOVE_SHOWN_OR_GAME_OVER, timeout=60_000)
        if page.locator("#status:has-text('Game over')").count():
            break
        seq = int(page.get_attribute("body", "data-legal-seq"))
        assert seq == web_stack.view(match_id)["seq"]  # the bot cannot move while it is our turn
        page.locator("svg.board .cell.legal").first.click()
        page.click("#place")
        deadline = time.monotonic() + 30
        while web_stack.view(match_id)["seq"] == seq:  # until the move is applied (the bot may answer at once)
            assert time.monotonic() < deadline, page.inner_text(".messages")
            time.sleep(0.1)
        moves += 1
    assert moves >= 3
    screenshot(page, "strands-vs-computer")
    view = web_stack.view(page.url.split("id=")[1])
    assert view["status"] == "over" and view["seats"][1] == "bot:mcts-1"
    assert page.evaluate(BOARD_OF_PAGE) == view["board"]
