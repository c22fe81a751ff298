"""Pure pieces of the gateway and its CLI: seat tokens, the secret file, SSE framing, the legal
actions' secret hygiene, the short move syntax, and the public position the CLI draws."""

from __future__ import annotations

import os
import stat

import orjson
import pytest

from bench.logs import DEFAULT_OPTIONS
from games.mastermind import commitment_of
from games.match import render
from games.playout import random_playout_records
from games.public import PublicPosition
from services.cli._api import parse_sse
from services.cli._moves import parse
from services.common.settings import SettingsError
from services.gateway.config import SECRET_FILE, load_secret
from services.gateway.positions import without_guessable_secrets
from services.gateway.ratelimit import Verdict
from services.gateway.sse import format_event, from_log
from services.gateway.tokens import InvalidToken, SeatTokens


def test_seat_tokens_name_their_match_and_seat_and_cannot_be_forged():
    tokens = SeatTokens(b"k" * 32)
    token = tokens.issue("m-1", 1)
    assert tokens.verify(token).match_id == "m-1" and tokens.verify(token).seat == 1
    assert tokens.issue("m-1", 0) != token and tokens.issue("m-2", 1) != token
    match_id, seat, mac = token.split(".")
    for forged in (
        f"{match_id}.0.{mac}",
        f"m-2.{seat}.{mac}",
        f"{match_id}.{seat}.{mac[:-1]}A",
        "garbage",
        "a.b.c",
        SeatTokens(b"other" * 8).issue("m-1", 1),
    ):
        with pytest.raises(InvalidToken):
            tokens.verify(forged)


def test_the_secret_is_made_once_private_and_reused_and_the_env_wins(tmp_path):
    first = load_secret(tmp_path, {})
    assert len(first) >= 32 and load_secret(tmp_path, {}) == first
    assert stat.S_IMODE(os.stat(tmp_path / SECRET_FILE).st_mode) == 0o600
    assert load_secret(tmp_path, {"PLYLOG_SECRET": "x" * 20}) == b"x" * 20
    with pytest.raises(SettingsError):
        load_secret(tmp_path, {"PLYLOG_SECRET": "short"})


def test_sse_framing_round_trips_through_the_cli_parser():
    accepted = {"status": "accepted", "seq": 4, "events": [{"type": "x"}], "view": None}
    rejected = {"status": "rejected", "seq": 4, "reason": {"code": "illegal", "message": "no"}}
    text = "retry: 2000\n\n" + format_event(accepted) + ": keep-alive\n\n" + format_event(rejected)
    parsed = list(parse_sse(iter(text.split("\n"))))
    assert parsed == [("result", accepted, "4"), ("rejected", rejected, None)]
    entry = {"seq": 2, "event_id": "e", "player": "p", "at": "t", "events": []}
    assert from_log("m", entry, None)["status"] == "accepted" and from_log("m", entry, {"v": 1})["view"] == {"v": 1}


def test_legal_actions_never_hand_out_guessable_mastermind_secrets():
    listed = [
        {"type": "set_code", "code": [0, 1, 2, 3], "salt": "public-derivable"},
        {"type": "set_code", "code": [1, 1, 2, 3], "salt": "public-derivable"},
        {"type": "commit", "commitment": "a" * 64},
        {"type": "guess", "code": [0, 0, 0, 0]},
    ]
    cleaned = without_guessable_secrets(listed)
    assert [a["type"] for a in cleaned] == ["set_code", "set_code", "guess"]
    assert cleaned[0]["salt"] != "public-derivable" and len(cleaned[0]["salt"]) == 32
    assert without_guessable_secrets(listed)[0]["salt"] != cleaned[0]["salt"]


@pytest.mark.parametrize(
    "game,line,action",
    [
        ("strands", "1,0 0,-1", {"type": "place", "cells": [[1, 0], [0, -1]]}),
        ("mana", "b1", {"type": "place_daimyo", "square": "b1"}),
        ("mana", "e1 d3 a3", {"type": "move", "from": "e1", "to": "d3", "bird": "a3"}),
        ("mana", "E1 D3", {"type": "move", "from": "e1", "to": "d3"}),
        ("mana", "drop d3 a3", {"type": "drop", "to": "d3", "bird": "a3"}),
        ("mastermind", "guess 0123", {"type": "guess", "code": [0, 1, 2, 3]}),
        ("mastermind", "feedback 2 1", {"type": "feedback", "black": 2, "white": 1}),
        (
            "mastermind",
            "reveal 0123 abcdef0123456789",
            {"type": "reveal", "code": [0, 1, 2, 3], "salt": "abcdef0123456789"},
        ),
        ("mind_ninja", "bid 3", {"type": "bid", "value": 3}),
        ("mind_ninja", "pass", {"type": "pass"}),
        ("mind_ninja", "role blocker", {"type": "choose_role", "role": "blocker"}),
        ("mind_ninja", "0,1 red", {"type": "place", "cell": [0, 1], "color": "red"}),
        (
            "mind_ninja",
            "setup 0,0:red 1,-1:blue",
            {"type": "setup", "stones": [{"cell": [0, 0], "color": "red"}, {"cell": [1, -1], "color": "blue"}]},
        ),
        ("mind_ninja", "end", {"type": "end_setup"}),
        ("strands", "resign", {"type": "resign"}),
        ("mana", "claim", {"type": "claim_timeout"}),
        ("mana", '{"type": "abort"}', {"type": "abort"}),
    ],
)
def test_short_move_syntax(game, line, action):
    assert parse(game, line) == action


def test_short_syntax_errors_say_what_was_expected_and_commit_uses_the_rules_commitment(capsys):
    for game, line in (("strands", "1;0"), ("mastermind", "guess red"), ("mana", "a1 b2 c3 d4"), ("strands", "{bad")):
        with pytest.raises(ValueError) as error:
            parse(game, line)
        assert str(error.value)
    set_code = parse("mastermind", "set 0123")
    assert set_code["code"] == [0, 1, 2, 3] and len(set_code["salt"]) == 32
    view = {"match_id": "m-x", "round": 2, "attempt": 1}
    commit = parse("mastermind", "commit 0123", view)
    salt = capsys.readouterr().out.split()[-1]
    assert commit["commitment"] == commitment_of("m-x", 2, 1, "0123", salt)


@pytest.mark.parametrize("game", sorted(DEFAULT_OPTIONS))
def test_the_public_position_the_cli_draws_is_the_true_position(game):
    """Folding the public events (what /events and the stream give) draws every position exactly
    as the rules' own state (which may hold a secret) draws it."""
    options = {**DEFAULT_OPTIONS[game], **({"side": 4} if game == "mind_ninja" else {})}
    position = PublicPosition()
    for _, step in random_playout_records(game, options, seed=5, match_id="m-cli"):
        if step.result["status"] == "accepted" and not step.result["duplicate"]:
            assert position.apply(step.result)
            assert render(position.state) == render(step.state)
            assert not position.apply(step.result)  # seen already


def test_retry_after_is_whole_seconds_and_at_least_one():
    assert Verdict(False, 1).retry_after_s == 1 and Verdict(False, 1001).retry_after_s == 2


def test_socket_close_reasons_fit_a_close_frame():
    from services.gateway.socket_session import close_reason

    assert close_reason("too slow") == "too slow"
    cut = close_reason("é" * 100)  # 200 bytes of UTF-8
    assert len(cut.encode()) <= 123 and cut.endswith("...") and cut.startswith("éé")


def test_the_result_stream_orders_results_and_passes_changeless_ones_only_when_kept():
    """ResultStream.results (SSE and sockets): the backlog, then live results by seq, a gap filled
    from the log, rejected ones as they come; duplicates and repeats only where `keep` says so."""
    import asyncio

    from services.gateway.live import Arrival, Listener
    from services.gateway.metrics import Metrics
    from services.gateway.sse import ResultStream

    log = [{"seq": n, "event_id": f"e{n}", "player": "p", "at": "t", "events": []} for n in range(1, 6)]

    class Projection:
        async def log_since_with_view(self, match_id, after):
            return [e for e in log if e["seq"] > after], {"seq": 5}, 5

    def live(seq, **extra):
        return {"status": "accepted", "seq": seq, "event_id": f"e{seq}", "duplicate": False, **extra}

    async def run(keep):
        listener = Listener("m")
        for result in (
            live(3),
            live(3),
            live(5),
            live(2, duplicate=True, event_id="mine"),
            {"status": "rejected", "seq": 5, "event_id": "bad"},
            live(5, event_id="again"),
        ):
            listener.offer(Arrival(result, orjson.dumps(result)))
        stream = ResultStream(Projection(), None, Metrics(), keepalive_s=0.01)
        got = []
        async for result in stream.results("m", 1, listener, keep=keep):
            if result is None:
                return got
            got.append((result["seq"], result["event_id"]))

    assert asyncio.run(run(None)) == [(2, "e2"), (3, "e3"), (4, "e4"), (5, "e5"), (5, "bad")]
    kept = asyncio.run(run(lambda r: r["event_id"] in ("mine", "again")))
    assert kept == [(2, "e2"), (3, "e3"), (4, "e4"), (5, "e5"), (2, "mine"), (5, "bad"), (5, "again")]


def test_an_early_stream_takes_each_result_once_from_whichever_copy_comes_first_in_seq_order():
    """Given a seat socket's stream (early listener) at seq 1, when each result comes twice (from
    plylog.results and from the projector), in either order, then it yields each once, in seq
    order; an early copy past the next seq is left for the announcements that fill the gap."""
    import asyncio

    from services.gateway.live import Arrival, Listener
    from services.gateway.metrics import Metrics
    from services.gateway.sse import ResultStream

    class Projection:  # nothing stored before the stream starts, no gap to fill
        async def log_since_with_view(self, match_id, after):
            return [], None, 0

    def accepted(seq):
        return {"status": "accepted", "seq": seq, "event_id": f"e{seq}", "player": "p", "duplicate": False}

    rejected = {"status": "rejected", "seq": 2, "event_id": "bad", "player": "q"}
    early, announced = (lambda r: Arrival(r, orjson.dumps(r), early=True)), (lambda r: Arrival(r, orjson.dumps(r)))

    async def run():
        listener, metrics = Listener("m", early=True), Metrics()
        for arrival in (
            early(accepted(2)),
            announced(accepted(2)),
            announced(rejected),
            early(rejected),
            early(accepted(4)),
            announced(accepted(3)),
            announced(accepted(4)),
            early(accepted(3)),
        ):
            listener.offer(arrival)
        got = []
        async for result in ResultStream(Projection(), None, metrics, keepalive_s=0.01).results("m", 1, listener):
            if result is None:
                return got, metrics.early_results._value.get()
            got.append((result["seq"], result["event_id"]))

    got, taken_early = asyncio.run(run())
    assert got == [(2, "e2"), (2, "bad"), (3, "e3"), (4, "e4")]
    assert taken_early == 1  # e2; the rejection came from the projector first, e4 had to wait


def test_a_retried_action_on_a_seat_socket_is_answered_by_its_duplicate_not_by_the_late_announcement():
    """Given a seat socket whose move was answered by its early copy (from plylog.results), when the
    client retries the same event id before the projector's announcement of the move arrives, then
    the retry's answer is its duplicate result; the announcement answers nothing."""
    import asyncio
    from types import SimpleNamespace

    from services.gateway.live import Arrival, Listener
    from services.gateway.metrics import Metrics
    from services.gateway.socket_session import SocketSession, _Waiting
    from services.gateway.sse import ResultStream

    class Projection:  # nothing stored before the stream starts
        async def log_since_with_view(self, match_id, after):
            return [], None, 0

    move = {"status": "accepted", "seq": 2, "event_id": "move-2", "player": "ann", "duplicate": False, "events": [1]}
    duplicate = {**move, "duplicate": True, "events": []}
    theirs = {**move, "seq": 3, "event_id": "ben-3", "player": "ben"}
    early, announced = (lambda r: Arrival(r, orjson.dumps(r), early=True)), (lambda r: Arrival(r, orjson.dumps(r)))

    async def sent_after(session, count):
        while session._outbox.qsize() < count:
            await asyncio.sleep(0.001)

    async def run():
        metrics = Metrics()
        stream = ResultStream(Projection(), None, metrics, keepalive_s=60)
        sockets = SimpleNamespace(stream=stream, metrics=metrics, queue_size=16, wait_timeout_s=60)
        session = SocketSession(sockets, None, "m", 0, ["ann", "ben"])
        listener = Listener("m", early=True)
        feeding = asyncio.create_task(session._feed(listener, 1))
        session._waiting["move-2"] = [_Waiting({"event_id": "move-2"}, 0.0)]
        listener.offer(early(move))
        await sent_after(session, 1)
        session._waiting["move-2"] = [_Waiting({"event_id": "move-2"}, 0.0)]  # the retry
        for arrival in (announced(move), early(duplicate), early(theirs)):
            listener.offer(arrival)
        await sent_after(session, 3)  # the other player's move comes after all of these
        feeding.cancel()
        return [orjson.loads(session._outbox.get_nowait()) for _ in range(session._outbox.qsize())]

    sent = asyncio.run(run())
    assert [(m["type"], m["event_id"], m["duplicate"]) for m in sent] == [
        ("result", "move-2", False),
        ("result", "move-2", True),
        ("update", "ben-3", False),
    ]


def test_the_hub_leaves_out_an_announcement_only_when_every_listener_has_it_from_the_topic():
    """Given a match's listeners, when the projector announces a result, then the hub hands it on
    unless every listener is early and its stream took that result's bytes from the topic: an
    early copy past the next seq (not taken) still gets its announcement, and so does a match
    with an SSE or `wait=true` listener too."""
    import asyncio

    from services.common.redis_keys import Keys
    from services.gateway.live import LiveHub
    from services.gateway.metrics import Metrics
    from services.gateway.sse import ResultStream

    class Projection:
        async def log_since_with_view(self, match_id, after):
            return [], None, 0

    def record(seq):
        return orjson.dumps(
            {
                "v": 1,
                "match_id": "m",
                "status": "accepted",
                "seq": seq,
                "event_id": f"e{seq}",
                "player": "p",
                "at": "2026-12-02T00:00:00Z",
                "events": [],
                "duplicate": False,
                "view": {"game": "strands", "status": "active", "seats": ["p", "q"], "to_move": [0]},
            }
        )

    keys = Keys("t:")

    async def run():
        hub = LiveHub(None, keys)
        with hub.listen("m", early=True) as first, hub.listen("m", early=True) as second:
            hub.deliver_early([(b"m", record(2)), (b"m", record(4))])  # 4: past the next seq
            for listener in (first, second):  # each stream reads its early copies
                stream = ResultStream(Projection(), hub, Metrics(), keepalive_s=0.01).results("m", 1, listener)
                assert (await anext(stream))["seq"] == 2 and await anext(stream) is None
            for seq in (2, 4):
                hub._dispatch(keys.live("m"), record(seq))
            sockets_only = [[a.result["seq"] for a in _drain(listener)] for listener in (first, second)]
            with hub.listen("m") as sse:
                hub._dispatch(keys.live("m"), record(2))
                with_sse = [len(_drain(listener)) for listener in (first, second, sse)]
        return sockets_only, with_sse

    sockets_only, with_sse = asyncio.run(run())
    assert sockets_only == [[4], [4]]  # 2 left out: both streams have it; 4 they left for this copy
    assert with_sse == [1, 1, 1]


def _drain(listener) -> list:
    out = []
    while not listener.queue.empty():
        out.append(listener.queue.get_nowait())
    return out
