"""Properties of the matchmaking decider over random lobby traffic (joins, leaves, expiries, seeks,
accepts, cancels, bots, ticks, retries, clocks going back):

- nobody is paired twice (an entry, a seek), nobody with themselves;
- a pool pair's ratings are within both players' windows at the pairing, by the rule written out
  here again (docs/matchmaking.md), and the window reported is the smaller one;
- a player who left (or whose entry expired) is never paired with that entry;
- a seek is accepted only within its range, by another player, before it expired;
- a pass leaves no two waiting players of a pool that the rule would pair;
- a bot takes a seat only after the wait its player allowed;
- replaying the records gives the same results byte for byte; evolve over the events rebuilds the
  lobby; the lobby survives a JSON round trip; every result fits the schema.

And 20 players of spread ratings joining over time are all paired, each pair within the rule.
"""

from __future__ import annotations

import random

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.matchmaking import Lobby, Matchmaker, evolve, rules
from games.timeutil import from_ms, to_ms
from schemas.matchmaking import MATCHMAKER, LobbyResult

T0_MS = 1_795_989_600_000
PLAYERS = [f"p{n}" for n in range(10)]
POOLS = [{"game": "strands", "options": {"layout": "small-4"}}, {"game": "mana", "clock": {"initial_s": 300}}]


def rule_window(waited_ms: int) -> int:
    """docs/matchmaking.md: 100 points, 50 more every full 10 s waited, at most 800."""
    return min(800, 100 + 50 * (waited_ms // 10_000))


operation = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 9), st.integers(1300, 1800), st.integers(0, 1), st.booleans()),
    st.tuples(st.just("leave"), st.integers(0, 9)),
    st.tuples(st.just("tick")),
    st.tuples(st.just("seek"), st.integers(0, 9), st.integers(1000, 2200), st.integers(0, 400)),
    st.tuples(st.just("accept"), st.integers(0, 9), st.integers(1000, 2200), st.integers(0, 20)),
    st.tuples(st.just("cancel"), st.integers(0, 9), st.integers(0, 20)),
    st.tuples(st.just("retry"), st.integers(0, 200)),
)
traffic = st.lists(st.tuples(operation, st.integers(-5_000, 40_000)), min_size=1, max_size=120)


def build_records(ops) -> list[bytes]:
    """Lobby records for the operations; each one's `at` moves by its delta (sometimes backwards)."""
    records: list[bytes] = []
    seek_ids: list[str] = []
    now = T0_MS
    for n, (op, delta) in enumerate(ops):
        now += delta
        kind = op[0]
        if kind == "retry":
            if records:
                records.append(records[op[1] % len(records)])
            continue
        player = MATCHMAKER if kind == "tick" else PLAYERS[op[1]]
        if kind == "join":
            action = {"type": "join_pool", **POOLS[op[3]], "rating": op[2], "ttl_s": 300}
            if op[4]:
                action.update(bot="bot:x", bot_after_s=60)
        elif kind == "leave":
            action = {"type": "leave_pool"}
        elif kind == "tick":
            action = {"type": "tick"}
        elif kind == "seek":
            action = {"type": "seek", **POOLS[0], "rating": op[2], "rating_min": op[2] - op[3], "ttl_s": 120}
            action["rating_min"] = max(0, action["rating_min"])
            seek_ids.append(rules.seek_id(player, f"e{n}"))
        elif kind == "accept":
            if not seek_ids:
                continue
            action = {"type": "accept_seek", "seek_id": seek_ids[op[3] % len(seek_ids)], "rating": op[2]}
        else:
            if not seek_ids:
                continue
            action = {"type": "cancel_seek", "seek_id": seek_ids[op[2] % len(seek_ids)]}
        records.append(
            orjson.dumps({"v": 1, "event_id": f"e{n}", "player": player, "at": from_ms(now), "action": action})
        )
    return records


def check_invariants(records: list[bytes]) -> None:
    matchmaker = Matchmaker()
    live: dict[str, dict] = {}  # entry id -> its pool_joined event, while it waits
    open_seeks: dict[str, dict] = {}
    used: set[str] = set()
    rebuilt = Lobby()
    results = []
    for raw in records:
        taken = matchmaker.feed(raw)
        results.append(orjson.dumps(taken.result))
        LobbyResult.model_validate(taken.result)
        for event in taken.result["events"]:
            rebuilt = evolve(rebuilt, event)
            kind = event["type"]
            if kind == "pool_joined":
                assert event["entry_id"] not in used and all(e["player"] != event["player"] for e in live.values())
                live[event["entry_id"]] = event
            elif kind == "pool_left":
                del live[event["entry_id"]]
                used.add(event["entry_id"])
            elif kind == "seek_opened":
                open_seeks[event["seek_id"]] = event
            elif kind == "seek_closed":
                assert event["reason"] == "cancelled" or to_ms(open_seeks[event["seek_id"]]["expires_at"]) <= to_ms(
                    event["at"]
                )
                del open_seeks[event["seek_id"]]
            elif kind == "seek_accepted":
                seek = open_seeks.pop(event["seek_id"])
                assert event["player"] != seek["player"] and event["rating"] >= seek["rating_min"]
                assert to_ms(event["at"]) < to_ms(seek["expires_at"])
            elif kind == "match_made":
                check_match(event, live, used)
        if taken.result["status"] == "accepted":
            assert rebuilt.evolved(now_ms=taken.lobby.now_ms, recent_ids=taken.lobby.recent_ids) == taken.lobby
            check_nothing_left_to_pair(taken.lobby)
    assert Lobby.from_json(orjson.loads(orjson.dumps(matchmaker.lobby.to_json()))) == matchmaker.lobby
    again = Matchmaker()
    assert [orjson.dumps(again.feed(raw).result) for raw in records] == results


def check_match(event: dict, live: dict[str, dict], used: set[str]) -> None:
    seats, at = event["seats"], to_ms(event["at"])
    assert seats[0] != seats[1]
    if event["via"] == "seek":
        return
    entries = [entry for entry in event["entries"] if entry is not None]
    joined = [live.pop(entry) for entry in entries]  # KeyError: paired twice, or after leaving
    used.update(entries)
    for seat, entry in enumerate(event["entries"]):
        if entry is not None:
            assert seats[seat] == next(j["player"] for j in joined if j["entry_id"] == entry)
    if event["via"] == "bot":
        (alone,) = joined
        assert at - to_ms(alone["at"]) >= alone["bot_after_s"] * 1000 and alone["bot"] in seats
        return
    first, second = joined
    assert first["pool_id"] == second["pool_id"] and first["player"] != second["player"]
    window = min(rule_window(at - to_ms(first["at"])), rule_window(at - to_ms(second["at"])))
    assert event["window"] == window and abs(first["rating"] - second["rating"]) <= window
    assert sorted(event["ratings"]) == sorted([first["rating"], second["rating"]])


def check_nothing_left_to_pair(lobby: Lobby) -> None:
    for i, a in enumerate(lobby.waiting):
        assert a.bot is None or lobby.now_ms - a.joined_ms < a.bot_after_ms
        for b in lobby.waiting[i + 1 :]:
            if a.pool_id == b.pool_id:
                window = min(rule_window(lobby.now_ms - a.joined_ms), rule_window(lobby.now_ms - b.joined_ms))
                assert abs(a.rating - b.rating) > window, (a, b)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traffic)
def test_random_lobby_traffic_keeps_every_pairing_rule(ops):
    check_invariants(build_records(ops))


@settings(max_examples=25, deadline=None)
@given(order=st.permutations(range(20)), gaps=st.lists(st.integers(0, 30_000), min_size=20, max_size=20))
def test_twenty_players_of_spread_ratings_joining_over_time_are_all_paired_within_the_rule(order, gaps):
    ratings = [1200 + 40 * n for n in range(20)]  # 1200 to 1960: any two within the widest window
    records, now = [], T0_MS
    for n, (player, gap) in enumerate(zip(order, gaps, strict=True)):
        now += gap
        action = {"type": "join_pool", "game": "strands", "clock": {"kind": "correspondence", "days_per_move": 3},
                  "rating": ratings[player]}  # fmt: skip
        records.append(
            orjson.dumps({"v": 1, "event_id": f"j{n}", "player": f"p{player}", "at": from_ms(now), "action": action})
        )
    for n in range(200):  # the matchmaker's ticks, every 5 s
        now += 5_000
        records.append(
            orjson.dumps(
                {"v": 1, "event_id": f"t{n}", "player": MATCHMAKER, "at": from_ms(now), "action": {"type": "tick"}}
            )
        )
    check_invariants(records)
    matchmaker = Matchmaker()
    made = [e for raw in records for e in matchmaker.feed(raw).result["events"] if e["type"] == "match_made"]
    assert sorted(p for m in made for p in m["seats"]) == sorted(f"p{n}" for n in range(20))
    assert matchmaker.lobby.waiting == ()


def test_a_thousand_random_joins_and_ticks_keep_the_rules():
    rng = random.Random(43)
    ops = []
    for _ in range(1000):
        wait = rng.randrange(0, 20_000)
        if rng.random() < 0.6:
            ops.append(
                (("join", rng.randrange(10), rng.randrange(1000, 2200), rng.randrange(2), rng.random() < 0.2), wait)
            )
        else:
            ops.append((("tick",), wait))
    records = build_records(ops)
    check_invariants(records)
    matchmaker = Matchmaker()
    vias = [e["via"] for raw in records for e in matchmaker.feed(raw).result["events"] if e["type"] == "match_made"]
    assert vias.count("pool") > 100 and vias.count("bot") > 10  # the traffic does pair, both ways


# --- rules versions: pairs within one version, and the creates state exactly it --------------------------
RULES_CHOICES = [None, "strands/1", "strands/2"]
stated_joins = st.lists(
    st.tuples(st.sampled_from(RULES_CHOICES), st.integers(1400, 1600), st.integers(0, 30_000)),
    min_size=2,
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stated_joins)
def test_pool_pairs_are_of_one_stated_version_and_their_creates_state_exactly_it(joins):
    matchmaker, now, stated = Matchmaker(), T0_MS, {}
    for n, (version, rating, delta) in enumerate(joins):
        now += delta
        action = {"type": "join_pool", **POOLS[0], "rating": rating, "ttl_s": 600}
        if version is not None:
            action["rules"] = version
        record = {"v": 1, "event_id": f"e{n}", "player": f"p{n}", "at": from_ms(now), "action": action}
        taken = matchmaker.feed(orjson.dumps(record))
        assert taken.result["status"] == "accepted", taken.result["reason"]  # every version stated exists
        tick = {
            "v": 1,
            "event_id": f"t{n}",
            "player": MATCHMAKER,
            "at": from_ms(now + 200_000),
            "action": {"type": "tick"},
        }
        for step in (taken, matchmaker.feed(orjson.dumps(tick))):
            events = step.result["events"]
            stated.update({e["entry_id"]: e.get("rules") for e in events if e["type"] == "pool_joined"})
            for made, create in zip([e for e in events if e["type"] == "match_made"], step.creates, strict=True):
                versions = {stated[entry] for entry in made["entries"]}
                assert len(versions) == 1, made  # never two versions, nor a version and none
                assert made.get("rules") == create["action"].get("rules") == versions.pop()
                assert ("rules" in create["action"]) == ("rules" in made)  # absent stays absent: legacy bytes
