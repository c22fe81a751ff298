"""The projector's pure parts without Redis: Glicko-2, and result/outcome records -> Redis commands."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from bench.logs import random_match_records
from games.fold import Replayer
from games.registry import GAME_MODULES
from services.common.redis_keys import Keys
from services.projector.glicko2 import NEW_PLAYER, Rating, rate, rate_match
from services.projector.plan import (
    Consumed,
    Known,
    Standing,
    deadline,
    decode,
    disagreement,
    match_fields,
    needs,
    plan,
    player_fields,
    utc_day,
)
from tests.support import T0_MS, record

KEYS = Keys("p:")
SIDE2 = {"layout": {"side": 2, "rows": ["22", "212", "22"]}}


def test_glickmans_worked_example():
    player = Rating(1500, 200, 0.06)
    after = rate(player, [(Rating(1400, 30), 1), (Rating(1550, 100), 0), (Rating(1700, 300), 0)])
    assert after.rating == pytest.approx(1464.06, abs=0.01)
    assert after.rd == pytest.approx(151.52, abs=0.01)
    assert after.volatility == pytest.approx(0.05999, abs=0.00001)


def test_a_rated_match_moves_both_players_symmetrically_and_a_draw_between_equals_changes_no_rating():
    winner, loser = rate_match(NEW_PLAYER, NEW_PLAYER, 0)
    assert winner.rating > 1500 > loser.rating
    assert winner.rating - 1500 == pytest.approx(1500 - loser.rating)
    assert winner.rd == loser.rd < 350
    first, second = rate_match(NEW_PLAYER, NEW_PLAYER, None)
    assert first.rating == second.rating == pytest.approx(1500)


def consumed(records: list[bytes], topic: str = "t.results", partition: int = 0, first: int = 0) -> list[Consumed]:
    return [Consumed(topic, partition, first + i, raw) for i, raw in enumerate(records)]


def fold(raws: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """Result and outcome records of move records, by the rules worker's own fold."""
    replayer, results, outcomes = Replayer(), [], []
    for raw in raws:
        taken = replayer.feed(raw)
        results.append(orjson.dumps(taken.result))
        if taken.outcome is not None:
            outcomes.append(orjson.dumps(taken.outcome))
    return results, outcomes


def planned(records: list[Consumed], known: Known | None = None, publish: bool = True):
    return plan(decode(records, "t.outcomes"), known or Known(), KEYS, publish)


def by_name(commands, name: str) -> list[tuple]:
    return [c for c in commands if c[0] == name]


def clocked_match() -> list[bytes]:
    """Strands with a clock and an open seat: created (open), joined (active), two moves, resigned."""
    create = {
        "type": "create",
        "game": "strands",
        "seats": ["alice", None],
        "options": SIDE2,
        "clock": {"initial_s": 60, "increment_s": 2},
    }
    return [
        record("m1", "alice", create, 0),
        record("m1", "bob", {"type": "join"}, 1),
        record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 3),
        record("m1", "bob", {"type": "place", "cells": [[0, -1], [-1, 1]]}, 10),
        record("m1", "alice", {"type": "resign"}, 12),
    ]


def test_each_accepted_result_writes_the_match_its_log_lists_deadline_activity_and_announces_itself():
    results, _ = fold(clocked_match())
    steps = [planned(consumed(results[: n + 1])).commands for n in range(len(results))]
    created = steps[0]
    assert ("ZADD", "p:matches:{0}:open", T0_MS, "m1") in created and (
        "ZADD",
        "p:matches:{0}:strands:open",
        T0_MS,
        "m1",
    ) in created
    assert ("ZREM", "p:deadlines:{0}", "m1") in created
    joined = planned(consumed(results[1:2]), Known(seqs={"m1": 1})).commands
    assert ("ZADD", "p:matches:{0}:active", T0_MS + 1000, "m1") in joined and (
        "ZREM",
        "p:matches:{0}:open",
        "m1",
    ) in joined
    assert ("ZADD", "p:deadlines:{0}", T0_MS + 1000 + 60_000, "m1") in joined  # bob joined: alice's clock runs
    moved = planned(consumed(results[2:3]), Known(seqs={"m1": 2})).commands
    assert ("ZADD", "p:deadlines:{0}", T0_MS + 3000 + 60_000, "m1") in moved  # bob to move, his clock from 3 s
    whole = steps[-1]
    hset = by_name(whole, "HSET")[0]
    fields = dict(zip(hset[2::2], hset[3::2], strict=False))
    last = orjson.loads(results[-1])
    assert hset[1] == "p:match:{0}:m1" and fields["seq"] == "5" and fields["status"] == "over"
    assert orjson.loads(fields["view"]) == last["view"] and orjson.loads(fields["seats"]) == ["alice", "bob"]
    assert orjson.loads(fields["outcome"]) == {
        "winner": 1,
        "reason": "resign",
        "scores": last["view"]["outcome"]["scores"],
    }
    assert [c[2] for c in by_name(whole, "ZADD") if c[1] == "p:match:{0}:m1:log"] == [1, 2, 3, 4, 5]
    assert ("ZADD", "p:matches:{0}:recent", T0_MS + 12_000, "m1") in whole and (
        "ZREM",
        "p:deadlines:{0}",
        "m1",
    ) in whole
    day = utc_day(T0_MS)
    counters = {(c[1], c[2]): c[3] for c in by_name(whole, "HINCRBY")}
    assert counters == {
        (f"p:activity:{{0}}:strands:{day}", "started"): 1,
        (f"p:activity:{{0}}:strands:{day}", "moves"): 2,
        (f"p:activity:{{0}}:strands:{day}", "finished"): 1,
        ("p:totals:{0}:strands", "started"): 1,
        ("p:totals:{0}:strands", "moves"): 2,
        ("p:totals:{0}:strands", "finished"): 1,
    }
    assert [c[1:] for c in by_name(whole, "PUBLISH")] == [("p:live:m1", raw) for raw in results]
    assert not by_name(planned(consumed(results), publish=False).commands, "PUBLISH")


def test_a_result_is_applied_once_per_seq_duplicates_and_rejections_only_announce():
    raws = clocked_match()[:3]
    raws += [
        raws[2],  # a client retry: answered `duplicate`
        record("m1", "alice", {"type": "place", "cells": [[0, 0]]}, 4),
    ]  # not alice's turn: rejected
    results, _ = fold(raws)
    assert [orjson.loads(r)["status"] for r in results] == ["accepted"] * 4 + ["rejected"]
    repeated = results + results[:3]  # the same records again later on the topic
    batch = planned(consumed(repeated))
    assert batch.counts["applied"] == 3 and batch.counts["stale"] == 3
    assert batch.counts["duplicates"] == 1 and batch.counts["rejected"] == 1
    assert len(by_name(batch.commands, "PUBLISH")) == len(repeated)
    known = Known(seqs={"m1": 3})
    later = planned(consumed(repeated, first=100), known)
    assert later.counts["applied"] == 0 and {c[0] for c in later.commands} == {"PUBLISH"}


def test_moves_count_every_accepted_game_action_of_every_game():
    for game in GAME_MODULES:
        replayer, results = Replayer(), []
        for raw in random_match_records(game, 1, seed=4):
            results.append(orjson.dumps(replayer.feed(raw).result))
        state = next(iter(replayer.states.values()))
        counters = {(c[1], c[2]): c[3] for c in by_name(planned(consumed(results)).commands, "HINCRBY")}
        assert counters[(f"p:totals:{{0}}:{game}", "moves")] == state.game_actions, game


def outcome(match_id: str, winner, players=("alice", "bob"), rated: bool = True, game: str = "strands") -> bytes:
    return orjson.dumps(
        {
            "v": 1,
            "match_id": match_id,
            "game": game,
            "players": list(players),
            "outcome": {"winner": winner, "reason": "x", "scores": None},
            "rated": rated,
            "started_at": "2026-11-29T22:00:00Z",
            "ended_at": "2026-11-29T22:01:00Z",
            "seq": 9,
        }
    )


def test_outcomes_fold_ratings_in_log_order_once_per_match():
    records = consumed(
        [outcome("a", 0), outcome("b", None), outcome("a", 1), outcome("c", 1, rated=False)], topic="t.outcomes"
    )
    batch = planned(records)
    assert batch.counts["rated"] == 2 and batch.counts["outcomes_repeated"] == 1 and batch.counts["unrated"] == 1
    first = rate_match(NEW_PLAYER, NEW_PLAYER, 0)
    second = rate_match(first[0], first[1], None)
    hsets = {c[1]: dict(zip(c[2::2], c[3::2], strict=False)) for c in by_name(batch.commands, "HSET")}
    assert hsets["p:player:{outcomes}:alice"] == dict(
        zip(player_fields("strands"), Standing(2, 1, 0, 1, second[0]).values(), strict=False)
    )
    assert (
        hsets["p:player:{outcomes}:bob"]["strands:losses"] == "1"
        and hsets["p:player:{outcomes}:bob"]["strands:draws"] == "1"
    )
    assert ("ZADD", "p:lb:{outcomes}:strands:rating", repr(second[0].rating), "alice") in batch.commands
    assert ("ZADD", "p:lb:{outcomes}:strands:wins", 1, "alice") in batch.commands
    assert ("ZADD", "p:lb:{outcomes}:strands:played", 2, "bob") in batch.commands
    marks = {c[1]: orjson.loads(c[2]) for c in by_name(batch.commands, "SET")}
    assert set(marks) == {"p:outcome:{outcomes}:a", "p:outcome:{outcomes}:b", "p:outcome:{outcomes}:c"}
    assert marks["p:outcome:{outcomes}:a"]["ratings"][0]["after"]["rating"] == first[0].rating
    assert marks["p:outcome:{outcomes}:c"]["ratings"] is None and marks["p:outcome:{outcomes}:c"]["rated"] is False
    again = planned(records, Known(outcomes_applied={"a", "b", "c"}))
    assert again.commands == [] and again.counts["outcomes_repeated"] == 4


def test_standings_start_from_what_redis_holds():
    held = Standing(10, 6, 3, 1, Rating(1620.5, 80.25, 0.0601))
    assert Standing.from_values(held.values()) == held
    assert Standing.from_values([None] * 7) == Standing()
    batch = planned(consumed([outcome("a", 1)], topic="t.outcomes"), Known(standings={("bob", "strands"): held}))
    _alice, bob = rate_match(NEW_PLAYER, held.rating, 1)
    bob_fields = {c[1]: dict(zip(c[2::2], c[3::2], strict=False)) for c in by_name(batch.commands, "HSET")}[
        "p:player:{outcomes}:bob"
    ]
    assert bob_fields["strands:played"] == "11" and bob_fields["strands:wins"] == "7"
    assert float(bob_fields["strands:rating"]) == bob.rating


def test_hot_seat_and_aborted_matches_are_not_rated():
    hot_seat = planned(consumed([outcome("h", 0, players=("alice", "alice"))], topic="t.outcomes"))
    assert hot_seat.counts["unrated"] == 1 and not by_name(hot_seat.commands, "HSET")


def test_unreadable_records_are_skipped_and_counted():
    good, _ = fold(clocked_match()[:1])
    bad = [
        b"\x00 not json",
        b"[1, 2]",
        orjson.dumps({"status": "accepted", "seq": 1, "match_id": "m9"}),
        orjson.dumps({**orjson.loads(good[0]), "at": "yesterday"}),
        None,
    ]
    batch = planned(consumed(bad + good))
    assert batch.counts["unreadable"] == 5 and batch.counts["applied"] == 1
    assert all(c[1] != "p:match:{0}:m9" for c in batch.commands)
    outcomes = planned(consumed([b"{}", orjson.dumps({"match_id": "x", "game": "g", "players": ["a"]})], "t.outcomes"))
    assert outcomes.counts["unreadable"] == 2 and outcomes.commands == []


@pytest.mark.parametrize(
    "change",
    [
        {"view.started_at": True},
        {"view.clock": [1]},
        {"view.clock": {"remaining_ms": [1, "2"], "since_ms": 0}},
        {"view.seats": ["alice", 7]},
        {"view.game": "chess"},
        {"view.to_move": [True]},
        {"seq": True},
        {"match_id": "m1:log"},
        {"at": "2026-99-99T00:00:00Z"},
        {"events": ["match_created"]},
        {"player": 5},
        {"seq": 2**60},
        {"view.clock": {"remaining_ms": [1, 2**60], "since_ms": 0}},  # beyond what Lua keeps exactly
    ],
)
def test_a_result_with_a_field_planning_cannot_use_is_skipped_and_counted(change):
    """Results on the topic may come from anyone who can write it: none may make planning raise
    or put a value into the script Redis would refuse (that wedged the projector)."""
    results, _ = fold(clocked_match()[:3])
    bad = orjson.loads(results[2])
    ((field, value),) = change.items()
    *path, name = field.split(".")
    (bad[path[0]] if path else bad)[name] = value
    batch = planned(consumed([results[0], orjson.dumps(bad), results[1]]))
    assert batch.counts["unreadable"] == 1 and batch.counts["applied"] == 2
    assert all(not isinstance(arg, bool) for command in batch.commands for arg in command)


def test_an_outcome_with_unusable_players_or_winner_is_skipped():
    good = orjson.loads(outcome("a", 0))
    for bad in (
        {**good, "players": ["alice", {"x": 1}]},
        {**good, "outcome": {**good["outcome"], "winner": True}},
        {**good, "game": "chess"},
    ):
        assert planned(consumed([orjson.dumps(bad)], topic="t.outcomes")).counts["unreadable"] == 1


def test_deadline_is_the_earliest_running_seat_running_out():
    view = {
        "status": "active",
        "to_move": [0, 1],
        "clock": {"since_ms": 1000, "remaining_ms": [5000, 3000], "initial_ms": 9000, "increment_ms": 0},
    }
    assert deadline(view) == 4000
    assert deadline({**view, "status": "over"}) is None
    assert deadline({**view, "clock": None}) is None
    assert deadline({**view, "clock": {**view["clock"], "since_ms": None}}) is None


def test_needs_names_every_match_outcome_and_standing_to_read():
    results, _ = fold(clocked_match()[:2])
    items = decode(consumed(results) + consumed([outcome("a", 0, game="mana")], topic="t.outcomes"), "t.outcomes")
    wanted = needs(items)
    assert wanted.matches == {(0, "m1")} and wanted.outcomes == {"a"}
    assert wanted.standings == {("alice", "mana"), ("bob", "mana")}
    assert Counter(i.kind for i in items) == {"result": 2, "outcome": 1}


def test_every_view_status_the_record_check_accepts_has_its_projected_list():
    """The check shared with the gateway takes the contract's statuses; planning files a match
    under the list of its status, so a status without a list would make its results unreadable."""
    from services.common.record_checks import VIEW_STATUSES
    from services.projector.plan import LIST_OF_STATUS

    assert set(LIST_OF_STATUS) == VIEW_STATUSES == {"waiting", "active", "over"}


def test_take_fetched_waits_for_the_first_record_only():
    """Given a consumer with two records fetched, take_fetched asks consume() for the rest without
    waiting; with none it returns nothing after the poll's timeout."""
    from services.common.kafka_fetch import take_fetched

    class Consumer:
        def __init__(self, fetched):
            self.fetched, self.calls = list(fetched), []

        def poll(self, timeout):
            self.calls.append(("poll", timeout))
            return self.fetched.pop(0) if self.fetched else None

        def consume(self, n, timeout):
            self.calls.append(("consume", n, timeout))
            taken, self.fetched = self.fetched[:n], self.fetched[n:]
            return taken

    busy = Consumer(["a", "b", "c"])
    assert take_fetched(busy, 10, 0.2) == ["a", "b", "c"] and busy.calls == [("poll", 0.2), ("consume", 9, 0)]
    assert take_fetched(Consumer(["a", "b"]), 1, 0.2) == ["a"]
    idle = Consumer([])
    assert take_fetched(idle, 10, 0.2) == [] and idle.calls == [("poll", 0.2)]


def finished(status="over", game="strands", seats=("alice", "bob"), winner=1, reason="x", seq=9, rated=None) -> list:
    """A match hash's FINISHED_FIELDS as HMGET gives them (`rated`: b"0" for an unrated match)."""
    if status is None:
        return [None] * 6
    done = orjson.dumps({"winner": winner, "reason": reason, "scores": None}) if status == "over" else None
    return [status.encode(), game.encode(), orjson.dumps(list(seats)), done, str(seq).encode(), rated]


def test_an_outcome_agrees_only_with_the_match_it_claims_to_have_finished():
    claim = orjson.loads(outcome("m1", 1))
    assert disagreement(claim, finished()) == ""
    assert disagreement(claim, finished(status=None)) == "no such match in the projection"
    assert disagreement(claim, finished(status="active")) == "the match is active, not over"
    assert "outcome" in disagreement(claim, finished(winner=0))
    assert "players" in disagreement(claim, finished(seats=("alice", "eve")))
    assert "players" in disagreement(claim, finished(seats=("bob", "alice")))  # seats swapped
    assert "game" in disagreement(claim, finished(game="mana"))
    assert "seq" in disagreement(claim, finished(seq=12))
    assert "rated" in disagreement(claim, finished(reason="aborted"))  # aborted matches are not rated
    assert "rated" in disagreement(claim, finished(rated=b"0"))  # nor unrated ones: a rated claim is refused
    assert disagreement({**claim, "rated": False}, finished(rated=b"0")) == ""
    assert disagreement({**claim, "reason": None}, finished()) == ""  # fields the check does not name


def test_an_unrated_match_keeps_its_flag_in_the_match_hash_and_a_rated_one_adds_no_field():
    match = Replayer()
    create = {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": SIDE2}
    rated = match.feed(record("r1", "alice", create, 0)).result
    unrated = match.feed(record("u1", "alice", {**create, "rated": False}, 0)).result
    assert "rated" not in match_fields(rated) and match_fields(unrated)["rated"] == "0"
    ended = match.feed(record("u1", "alice", {"type": "resign"}, 1))
    assert match_fields(ended.result)["rated"] == "0" and ended.outcome["rated"] is False


def test_a_refused_outcome_changes_nothing_and_is_counted_even_after_the_true_one():
    items = decode(consumed([outcome("a", 1)], topic="t.outcomes"), "t.outcomes")
    batch = plan(items, Known(), Keys("p:", 4), refusals={0: "no such match in the projection"})
    assert batch.commands == [] and batch.counts["outcomes_refused"] == 1
    after = plan(items, Known(outcomes_applied={"a"}), Keys("p:", 4), refusals={0: "its players differ"})
    assert after.commands == [] and after.counts["outcomes_refused"] == 1
