"""The matchmaking decider, given/when/then over lobby records: seeks (open, accept, cancel, expire),
pools (join, leave, expire, the widening window, the pairing order), bots, every rejection code,
and the create records the pairings make, folded by the real match rules."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from games.fold import Replayer
from games.matchmaking import Lobby, Matchmaker, create_record, evolve, rules
from games.timeutil import from_ms
from schemas.matchmaking import LOBBY_REJECTION_MEANINGS, MATCHMAKER, LobbyRejectionCode, LobbyResult
from tests.schema_check import check
from tests.support import T0_MS

STRANDS = {"game": "strands", "options": {"layout": "small-4"}}
ONE_DAY = {"kind": "correspondence", "days_per_move": 1}


class Lobbyist:
    """Drives the real fold, keeping every step; `t` is seconds after T0."""

    def __init__(self) -> None:
        self.matchmaker = Matchmaker()
        self.steps: list = []
        self.records: list[bytes] = []

    def send(self, player: str, action: dict[str, Any], t: float, event_id: str | None = None):
        raw = orjson.dumps(
            {
                "v": 1,
                "event_id": event_id or f"{player}-{len(self.records)}",
                "player": player,
                "at": from_ms(T0_MS + round(t * 1000)),
                "action": action,
            }
        )
        self.records.append(raw)
        taken = self.matchmaker.feed(raw)
        LobbyResult.model_validate(taken.result)
        check("lobby_result", orjson.dumps(taken.result))
        if taken.result["status"] == "accepted":
            check("lobby_record", raw)
        self.steps.append(taken)
        return taken

    def ok(self, player: str, action: dict[str, Any], t: float, **kwargs: Any) -> list[dict]:
        result = self.send(player, action, t, **kwargs).result
        assert result["status"] == "accepted", result.get("reason")
        return result["events"]

    def rejected(self, player: str, action: dict[str, Any], t: float, code: str) -> str:
        result = self.send(player, action, t).result
        assert result["status"] == "rejected", result["events"]
        assert result["reason"]["code"] == code, result["reason"]
        return result["reason"]["message"]

    def tick(self, t: float) -> list[dict]:
        return self.ok(MATCHMAKER, {"type": "tick"}, t)

    def join(self, player: str, rating: int, t: float, **extra: Any) -> list[dict]:
        return self.ok(player, {"type": "join_pool", **STRANDS, "rating": rating, **extra}, t)

    @property
    def lobby(self) -> Lobby:
        return self.matchmaker.lobby


def made(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "match_made"]


# --- seeks ---------------------------------------------------------------------------------------------------
def test_a_seek_accepted_by_an_eligible_player_makes_a_match_the_rules_create():
    lobby = Lobbyist()
    seek = {"type": "seek", **STRANDS, "clock": ONE_DAY, "rating": 1500, "rating_min": 1400, "rating_max": 1700}
    opened = lobby.ok("ann", {**seek, "seat": 1}, 0)[0]
    assert opened["type"] == "seek_opened" and opened["seek_id"] == rules.seek_id("ann", "ann-0")
    assert opened["expires_at"] == from_ms(T0_MS + rules.DEFAULT_TTL_MS)
    assert opened["clock"] == {**ONE_DAY, "vacation_days": 7} and opened["options"] == {"layout": "small-4"}
    events = lobby.ok("ben", {"type": "accept_seek", "seek_id": opened["seek_id"], "rating": 1650}, 30)
    assert [e["type"] for e in events] == ["seek_accepted", "match_made"]
    match = events[1]
    assert match["seats"] == ["ben", "ann"] and match["ratings"] == [1650, 1500] and match["via"] == "seek"
    assert lobby.lobby.seeks == ()
    create = lobby.steps[-1].creates[0]
    assert create == create_record(match) and create["player"] == MATCHMAKER and create["at"] == match["at"]
    rules_fold = Replayer()
    first = rules_fold.feed(orjson.dumps(create), key=match["match_id"]).result
    assert first["status"] == "accepted" and first["view"]["status"] == "active"
    assert first["view"]["clock"]["kind"] == "correspondence" and first["view"]["seats"] == ["ben", "ann"]
    again = rules_fold.feed(orjson.dumps(create), key=match["match_id"]).result  # a restarted service's
    assert again["duplicate"] is True and again["events"] == []


def test_who_may_accept_a_seek():
    lobby = Lobbyist()
    seek_id = lobby.ok("ann", {"type": "seek", **STRANDS, "rating": 1500, "rating_min": 1400}, 0)[0]["seek_id"]
    accept = {"type": "accept_seek", "seek_id": seek_id}
    assert "own seek" in lobby.rejected("ann", {**accept, "rating": 1500}, 1, "own_seek")
    message = lobby.rejected("ben", {**accept, "rating": 1399}, 2, "out_of_range")
    assert message == f"rating 1399 is outside {seek_id}'s range (1400 to any)"
    assert lobby.ok("cat", {**accept, "rating": 1400}, 3)[1]["seats"] in (["ann", "cat"], ["cat", "ann"])
    assert "accepted, cancelled or expired" in lobby.rejected("dan", {**accept, "rating": 1450}, 4, "unknown_seek")


def test_a_seek_is_cancelled_by_its_player_only_and_expires_at_its_time():
    lobby = Lobbyist()
    first = lobby.ok("ann", {"type": "seek", **STRANDS, "rating": 1500}, 0)[0]["seek_id"]
    second = lobby.ok("ann", {"type": "seek", **STRANDS, "rating": 1500, "ttl_s": 60}, 1)[0]["seek_id"]
    assert "only they may cancel" in lobby.rejected("ben", {"type": "cancel_seek", "seek_id": first}, 2, "not_yours")
    closed = lobby.ok("ann", {"type": "cancel_seek", "seek_id": first}, 3)
    assert closed == [{"type": "seek_closed", "seek_id": first, "reason": "cancelled", "at": from_ms(T0_MS + 3000)}]
    assert lobby.tick(60.999) == []
    assert lobby.tick(61) == [
        {"type": "seek_closed", "seek_id": second, "reason": "expired", "at": from_ms(T0_MS + 61000)}
    ]
    lobby.rejected("ben", {"type": "accept_seek", "seek_id": second, "rating": 1500}, 62, "unknown_seek")


def test_an_expired_seek_cannot_be_accepted_even_by_the_record_that_finds_it_expired():
    lobby = Lobbyist()
    seek_id = lobby.ok("ann", {"type": "seek", **STRANDS, "rating": 1500, "ttl_s": 10}, 0)[0]["seek_id"]
    lobby.rejected("ben", {"type": "accept_seek", "seek_id": seek_id, "rating": 1500}, 10, "unknown_seek")
    assert len(lobby.lobby.seeks) == 1  # a rejected record changes nothing; the next accepted one expires it
    assert lobby.tick(10)[0]["reason"] == "expired"


def test_a_player_has_at_most_five_open_seeks():
    lobby = Lobbyist()
    for n in range(rules.MAX_SEEKS_PER_PLAYER):
        lobby.ok("ann", {"type": "seek", **STRANDS, "rating": 1500}, n)
    message = lobby.rejected("ann", {"type": "seek", **STRANDS, "rating": 1500}, 9, "too_many_seeks")
    assert message == "'ann' has 5 open seeks, the most a player may have"


# --- pools ---------------------------------------------------------------------------------------------------
def test_the_window_widens_with_waiting_until_both_players_windows_hold_the_difference():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0)
    lobby.join("ben", 1720, 5)  # 220 apart: ann's window reaches 250 at 30 s, ben's 250 at 35 s
    assert made(lobby.tick(34.999)) == []
    match = made(lobby.tick(35))[0]
    assert match["window"] == 250 and sorted(match["ratings"]) == [1500, 1720] and match["via"] == "pool"
    assert lobby.lobby.waiting == ()
    assert [rules.window(0, ms) for ms in (0, 9_999, 10_000, 140_000, 10**9)] == [100, 100, 150, 800, 800]


def test_the_longest_waiting_player_chooses_first():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0)
    lobby.join("cat", 1700, 1)
    events = lobby.join("ben", 1600, 2)  # as near to cat as to ann: ann waited longer
    assert [sorted(m["seats"]) for m in made(events)] == [["ann", "ben"]]
    assert [e.player for e in lobby.lobby.waiting] == ["cat"]


@pytest.mark.parametrize("lower_first", [True, False])
def test_the_nearest_rating_wins_and_equally_near_ones_go_by_join_order(lower_first):
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0)
    first, second = (1340, 1660) if lower_first else (1660, 1340)
    lobby.join("ben", first, 0)
    lobby.join("cat", second, 0)
    assert made(lobby.tick(19.999)) == []  # windows of 150: 160 apart is too far
    events = made(lobby.tick(20))  # windows of 200: ben and cat are as near to ann; ben joined first
    assert [sorted(m["seats"]) for m in events] == [["ann", "ben"]]


def test_pools_are_per_game_options_and_clock():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0)
    lobby.join("ben", 1500, 1, clock=ONE_DAY)
    lobby.ok("cat", {"type": "join_pool", "game": "strands", "options": {"layout": "small-5"}, "rating": 1500}, 2)
    lobby.ok("dan", {"type": "join_pool", "game": "mana", "rating": 1500}, 3)
    lobby.ok(
        "eve", {"type": "join_pool", "game": "strands", "clock": {"initial_s": 300, "increment_s": 5}, "rating": 1}, 4
    )
    ids = [entry.pool_id for entry in lobby.lobby.waiting]
    assert ids[0].startswith("strands/untimed/o-") and ids[1] == ids[0].replace("untimed", "1d")
    assert ids[2].startswith("strands/untimed/o-") and ids[2] != ids[0]
    assert ids[3:] == ["mana/untimed", "strands/300+5"] and len(set(ids)) == 5
    assert made(lobby.tick(600)) == []


def test_leaving_and_expiry_take_a_player_out_of_the_pool():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0)
    assert "leave it first" in lobby.rejected(
        "ann", {"type": "join_pool", **STRANDS, "rating": 1500}, 1, "already_waiting"
    )
    left = lobby.ok("ann", {"type": "leave_pool"}, 2)
    assert left[0]["type"] == "pool_left" and left[0]["reason"] == "left"
    assert lobby.rejected("ann", {"type": "leave_pool"}, 3, "not_waiting") == "'ann' waits in no pool"
    lobby.join("ben", 1500, 4, ttl_s=30)
    assert lobby.tick(33.999) == []
    entry = lobby.lobby.waiting[0]
    assert lobby.tick(34) == [
        {
            "type": "pool_left",
            "entry_id": entry.entry_id,
            "pool_id": entry.pool_id,
            "player": "ben",
            "reason": "expired",
            "at": from_ms(T0_MS + 34_000),
        }
    ]
    assert lobby.lobby.waiting == ()
    lobby.join("cat", 1500, 40)
    assert made(lobby.tick(41)) == []  # ben is gone: nobody to pair with


def test_a_bot_takes_the_seat_once_the_allowed_wait_ran_out_unless_a_person_came():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0, bot="bot:mcts-2", bot_after_s=60)
    assert made(lobby.tick(59.999)) == []
    match = made(lobby.tick(60))[0]
    assert match["via"] == "bot" and sorted(match["seats"]) == ["ann", "bot:mcts-2"]
    assert match["ratings"][match["seats"].index("bot:mcts-2")] is None
    lobby.join("ben", 1500, 70, bot="bot:mcts-2", bot_after_s=60)
    lobby.join("cat", 1550, 80)
    assert [m["via"] for m in made(lobby.steps[-1].result["events"])] == ["pool"]
    assert "against themselves" in lobby.rejected(
        "dan", {"type": "join_pool", **STRANDS, "rating": 1, "bot": "dan", "bot_after_s": 1}, 90, "illegal"
    )


# --- the fold: ids, retries, bad records, every code -------------------------------------------------------------
def test_a_retry_is_a_duplicate_and_pairings_and_ids_are_the_same_on_every_replay():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0)
    again = lobby.matchmaker.feed(lobby.records[0]).result
    assert again["duplicate"] is True and again["events"] == [] and len(lobby.lobby.waiting) == 1
    lobby.join("ben", 1550, 1)
    first = [orjson.dumps(s.result) for s in lobby.steps]
    replayed = Matchmaker()
    assert [orjson.dumps(replayed.feed(raw).result) for raw in lobby.records] == first
    assert Lobby.from_json(orjson.loads(orjson.dumps(lobby.lobby.to_json()))) == lobby.lobby
    match = made(lobby.steps[-1].result["events"])[0]
    entries = [rules.entry_id("ann", "ann-0"), rules.entry_id("ben", "ben-1")]
    assert (
        match["match_id"] == rules.match_id("pool", *entries)
        and match["create_event_id"] == match["match_id"] + ":create"
    )


def test_evolve_over_the_events_rebuilds_the_lobby():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0, bot="bot:x", bot_after_s=5)
    lobby.ok("cat", {"type": "seek", **STRANDS, "rating": 1500, "ttl_s": 9}, 1)
    lobby.join("ben", 1900, 2)
    lobby.tick(20)
    rebuilt = Lobby()
    for taken in lobby.steps:
        for event in taken.result["events"]:
            rebuilt = evolve(rebuilt, event)
        assert rebuilt.evolved(now_ms=taken.lobby.now_ms, recent_ids=taken.lobby.recent_ids) == taken.lobby


@pytest.mark.parametrize(
    ("raw", "code", "says"),
    [
        (b"{", "malformed", "not JSON"),
        (b"[1]", "malformed", "not a JSON object"),
        (b"{}", "malformed", "lobby record"),
        (
            b'{"v":1,"event_id":"e","player":"p","at":"2026-11-29T22:00:00Z","action":{"type":"dance"}}',
            "malformed",
            "dance",
        ),
        (
            b'{"v":1,"event_id":"e","player":"p","at":"2026-11-29T22:00:00Z","action":{"type":"tick"}}',
            "not_matchmaker",
            "ticks",
        ),
        (
            b'{"v":1,"event_id":"e","player":"p","at":"2026-11-29T22:00:00Z","action":{"type":"seek","game":"mana","rating":1,"options":{"max_plies":-5}}}',
            "malformed",
            "mana options",
        ),
        (
            b'{"v":1,"event_id":"e","player":"p","at":"2026-11-29T22:00:00Z","action":{"type":"seek","game":"mana","rating":1,"rating_min":9,"rating_max":8}}',
            "malformed",
            "above rating_max",
        ),
        (
            b'{"v":1,"event_id":"e","player":"p","at":"2026-11-29T22:00:00Z","action":{"type":"join_pool","game":"mana","rating":1,"bot":"bot:x"}}',
            "malformed",
            "bot_after_s",
        ),
        (
            b'{"v":1,"event_id":"e","player":"p","at":"2026-11-29T22:00:00Z","action":{"type":"join_pool","game":"mana","rating":true}}',
            "malformed",
            "rating",
        ),
        (b" " * 70_000, "too_large", "limit"),
    ],
)
def test_bad_records_are_rejected_with_a_code_and_a_message(raw, code, says):
    result = Matchmaker().feed(raw).result
    LobbyResult.model_validate(result)
    assert result["status"] == "rejected" and result["reason"]["code"] == code and says in result["reason"]["message"]


def test_every_rejection_code_is_explained():
    from typing import get_args

    assert set(LOBBY_REJECTION_MEANINGS) == set(get_args(LobbyRejectionCode))


def test_a_full_lobby_refuses_more_entries(monkeypatch):
    monkeypatch.setattr(rules, "MAX_WAITING", 2)
    monkeypatch.setattr(rules, "MAX_OPEN_SEEKS", 1)
    lobby = Lobbyist()
    lobby.join("ann", 1000, 0)
    lobby.join("ben", 3000, 1)
    assert "the most they may hold" in lobby.rejected(
        "cat", {"type": "join_pool", **STRANDS, "rating": 2000}, 2, "lobby_full"
    )
    lobby.ok("cat", {"type": "seek", **STRANDS, "rating": 1500}, 3)
    lobby.rejected("dan", {"type": "seek", **STRANDS, "rating": 1500}, 4, "lobby_full")


def test_time_never_goes_back():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 100)
    events = lobby.join("ben", 1500, 50)  # a gateway whose clock is behind: decided at 100 s
    assert events[0]["at"] == from_ms(T0_MS + 100_000) and lobby.lobby.now_ms == T0_MS + 100_000
