"""The projector's keys behind "my games", rating history and recent matches, and the gateway's
ordering of "my games" (docs/my-games.md)."""

from __future__ import annotations

import orjson

from services.gateway.players import my_game, order
from services.projector.glicko2 import NEW_PLAYER, rate_match
from tests.unit.test_projector import by_name, clocked_match, consumed, fold, outcome, planned

DAY_MS = 86_400_000


def test_each_rated_outcome_adds_the_rating_after_it_to_both_players_histories_once():
    records = consumed(
        [outcome("a", 0), outcome("b", None), outcome("a", 1), outcome("c", 1, rated=False)], "t.outcomes"
    )
    commands = planned(records).commands
    history = [(c[1], c[2], orjson.loads(c[3])) for c in by_name(commands, "ZADD") if "rating-history" in c[1]]
    first = rate_match(NEW_PLAYER, NEW_PLAYER, 0)
    second = rate_match(first[0], first[1], None)
    alice = [(n, e) for key, n, e in history if key == "p:rating-history:{outcomes}:strands:alice"]
    assert [n for n, _ in alice] == [1, 2]  # numbered by rated matches played; the repeat and the unrated add none
    assert [e["match_id"] for _, e in alice] == ["a", "b"] and [e["result"] for _, e in alice] == ["win", "draw"]
    assert alice[0][1]["rating"] == round(first[0].rating, 1) and alice[1][1]["rating"] == round(second[0].rating, 1)
    bob = [e for key, _, e in history if key.endswith(":bob")]
    assert [e["result"] for e in bob] == ["loss", "draw"] and bob[0]["opponent"] == "alice"
    recent = {(c[1], c[3]) for c in by_name(commands, "ZADD") if "player-recent" in c[1]}
    assert recent == {(f"p:player-recent:{{outcomes}}:{p}", m) for p in ("alice", "bob") for m in "abc"}
    assert any(c[0] == "ZREMRANGEBYRANK" and "rating-history" in c[1] for c in commands)  # kept bounded


def test_a_players_unfinished_matches_are_listed_until_the_match_is_over():
    results, _ = fold(clocked_match())
    created = planned(consumed(results[:1])).commands
    listed = [(c[0], c[1], c[3]) for c in created if "player-matches" in str(c[1])]
    assert listed == [("ZADD", "p:player-matches:{0}:alice", "m1")]  # the open seat is nobody's
    whole = planned(consumed(results)).commands
    mine = {c[1]: c for c in whole if "player-matches" in str(c[1])}
    assert mine == {
        "p:player-matches:{0}:alice": ("ZREM", "p:player-matches:{0}:alice", "m1"),
        "p:player-matches:{0}:bob": ("ZREM", "p:player-matches:{0}:bob", "m1"),
    }


def _match(match_id: str, to_move: list[int], since_ms: int, remaining: list[int], updated_ms: int) -> dict:
    clock = {"kind": "correspondence", "remaining_ms": remaining, "since_ms": since_ms}
    view = {"to_move": to_move, "clock": clock}
    return {
        "match_id": match_id,
        "game": "strands",
        "status": "active",
        "seats": ["ann", "ben"],
        "seq": 3,
        "updated_ms": updated_ms,
        "view": view,
    }


def test_my_games_puts_my_move_first_the_least_time_left_first_in_days():
    now = 10 * DAY_MS
    rows = [
        my_game(_match("theirs", [1], now - DAY_MS // 2, [DAY_MS, DAY_MS], now), "ann", now),
        my_game(_match("mine-later", [0], now - DAY_MS // 4, [DAY_MS, DAY_MS], now - 5), "ann", now),
        my_game(_match("mine-soon", [0], now - DAY_MS // 2, [DAY_MS, DAY_MS], now - 9), "ann", now),
    ]
    ordered = order(rows)
    assert [r["match_id"] for r in ordered] == ["mine-soon", "mine-later", "theirs"]
    assert ordered[0]["your_move"] and ordered[0]["days_left"] == 0.5 and ordered[0]["opponent"] == "ben"
    assert ordered[2]["time_left_ms"] == DAY_MS  # not ann's turn: her clock does not run
