"""Tournament properties (hypothesis), over random tournaments played to their end through the fold
with random results, absences, withdrawals, returns and late entries:

- nobody plays twice in a round (an arena wave) and nobody plays themselves;
- Swiss: never a rematch, and an early end (`exhausted`) only when every pairing of the field has
  one; no second bye, and nobody's first-move difference beyond ±2, whenever a pairing of the field
  avoids it (each checked by brute force over every pairing of the field);
- round robin: everyone meets everyone exactly once per cycle, colours within ±2;
- knockout: the bracket is consistent (each slot is held by one of the two it comes from: the
  winner, the higher seed of a drawn board, the player with a bye) and has one champion;
- arena: a wave never pairs a busy player;
- replaying a tournament's records gives the same results and state, byte for byte; the state
  survives a JSON round trip; evolve over the events rebuilds the fold's state;
- the pairing matching is the lexicographic optimum (brute force on small graphs).
"""

from __future__ import annotations

import itertools
import random

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.tournaments import create_record, evolve, read, step
from games.tournaments.matching import best_pairing
from games.tournaments.state import TournamentState
from games.tournaments.swiss import BYE, violates_colour_limit
from tests.tournament_support import Tourney, run_random

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
players = st.integers(2, 10)
seeds = st.integers(0, 2**32 - 1)
leave_rates = st.sampled_from([0.0, 0.0, 0.05, 0.15])


def play(format_: str, count: int, seed: int, leave_rate: float, **settings_) -> Tourney:
    rng = random.Random(seed)
    t = Tourney()
    t.create(format_, max_players=64, forfeit_wait_s=30, **settings_)
    for i in range(count):
        t.register(f"p{i}", ratings={f"p{i}": rng.randint(1000, 2200)})
    t.start()
    run_random(t, rng, leave_rate)
    return t


def states_before_each_event(t: Tourney):
    """(state before, event) over the tournament's whole event stream."""
    state = None
    for event in t.events:
        yield state, event
        state = evolve(state, event)


def check_common(t: Tourney) -> None:
    rounds: dict[tuple[int, int], list[str]] = {}
    for pairing in t.state.pairings:
        assert pairing.seats[0] != pairing.seats[1]
        rounds.setdefault((pairing.round, pairing.game), []).extend(pairing.seats)
    for (round_, _), seated in rounds.items():
        assert len(seated) == len(set(seated)), f"someone plays twice in round {round_}"
    byes = [(b.round, b.player) for b in t.state.byes]
    for round_, player in byes:
        assert player not in rounds.get((round_, 1), []), "a bye for a player paired that round"
    check_replay(t)


def check_replay(t: Tourney) -> None:
    state, results = None, []
    for line in t.lines:
        taken = step(state, read(line))
        state, results = taken.state, [*results, taken.result]
    assert [orjson.dumps(r) for r in results] == [orjson.dumps(r) for r in t.results]
    assert state.model_dump_json() == t.state.model_dump_json()
    assert TournamentState.model_validate_json(t.state.model_dump_json()) == t.state
    rebuilt = None
    for event in t.events:
        rebuilt = evolve(rebuilt, event)
    assert rebuilt.evolved(seq=t.state.seq, recent_ids=t.state.recent_ids) == t.state


def colours_within_limit(state: TournamentState | None) -> bool:
    return state is None or all(abs(e.colour_difference) <= 2 for e in state.entrants)


# --- Swiss --------------------------------------------------------------------------------------------
def pairing_exists(state: TournamentState, field: list[str], one_bye: bool = False, colours: bool = False) -> bool:
    """Brute force over every pairing of `field` (plus a bye if odd): is there one without a
    rematch, and (if asked) without a second bye, and within the colour limit?"""
    opponents = {p: state.opponents(p) for p in field}

    def fits(a: str, b: str) -> bool:
        if b == BYE:
            return not one_bye or state.entrant(a).byes == 0
        return b not in opponents[a] and not (colours and violates_colour_limit(*_colour_seating(state, a, b)))

    def search(rest: list[str]) -> bool:
        if not rest:
            return True
        head, tail = rest[0], rest[1:]
        return any(fits(head, other) and search(tail[:i] + tail[i + 1 :]) for i, other in enumerate(tail))

    return search(field + ([BYE] if len(field) % 2 else []))


def _colour_seating(state: TournamentState, a: str, b: str):
    first, second = state.entrant(a), state.entrant(b)
    return (first, second) if first.colour_difference <= second.colour_difference else (second, first)


@SETTINGS
@given(count=players, rounds=st.integers(1, 7), seed=seeds, leave_rate=leave_rates)
def test_swiss_never_rematches_and_keeps_byes_and_colours_whenever_it_can(count, rounds, seed, leave_rate):
    t = play("swiss", count, seed, leave_rate, rounds=rounds)
    check_common(t)
    for before, event in states_before_each_event(t):
        if event["type"] == "tournament_ended" and event["reason"] == "exhausted":
            assert not pairing_exists(before, [e.player for e in before.active()])
        if event["type"] != "round_paired":
            continue
        field = [e.player for e in before.active()]
        seated = [p for pairing in event["pairings"] for p in pairing["seats"]] + [b["player"] for b in event["byes"]]
        assert sorted(seated) == sorted(field)  # every active player is paired or has the bye
        assert not [p for p in event["pairings"] if p["seats"][1] in before.opponents(p["seats"][0])]
        second_bye = [b["player"] for b in event["byes"] if before.entrant(b["player"]).byes > 0]
        if second_bye:
            assert not pairing_exists(before, field, one_bye=True)
        for pairing in event["pairings"]:
            first, second = (before.entrant(p) for p in pairing["seats"])
            if violates_colour_limit(first, second):
                assert not pairing_exists(before, field, one_bye=not second_bye, colours=True)


# --- round robin ------------------------------------------------------------------------------------
@SETTINGS
@given(count=players, cycles=st.integers(1, 2), seed=seeds, leave_rate=leave_rates)
def test_round_robin_meets_everyone_once_per_cycle(count, cycles, seed, leave_rate):
    t = play("round_robin", count, seed, leave_rate, cycles=cycles)
    check_common(t)
    seeded = t.state.seeds
    meetings = {}
    for pairing in t.state.pairings:
        pair = frozenset(pairing.seats)
        meetings[pair] = meetings.get(pair, 0) + 1
    assert meetings == {frozenset(pair): cycles for pair in itertools.combinations(seeded, 2)}
    for round_ in range(1, t.state.round + 1):
        present = [p for pairing in t.state.of_round(round_) for p in pairing.seats]
        present += [b.player for b in t.state.byes if b.round == round_]
        assert sorted(present) == sorted(seeded)
    difference = dict.fromkeys(seeded, 0)  # seats as the table gives them, games played or not
    for pairing in sorted(t.state.pairings, key=lambda p: p.round):
        difference[pairing.seats[0]] += 1
        difference[pairing.seats[1]] -= 1
        assert abs(difference[pairing.seats[0]]) <= 2 and abs(difference[pairing.seats[1]]) <= 2
    if leave_rate == 0:  # every game played: the players' own histories too
        for before, _ in states_before_each_event(t):
            assert colours_within_limit(before)


# --- knockout -----------------------------------------------------------------------------------------
@SETTINGS
@given(count=players, replays=st.integers(0, 2), seed=seeds, leave_rate=leave_rates)
def test_knockout_bracket_is_consistent_and_has_one_champion(count, replays, seed, leave_rate):
    t = play("knockout", count, seed, leave_rate, draw_replays=replays)
    check_common(t)
    state = t.state
    assert len(state.bracket[-1]) == 1 and state.winner == state.bracket[-1][0]
    for round_, (slots, after) in enumerate(itertools.pairwise(state.bracket), start=1):
        assert len(after) * 2 == len(slots)
        for board, holder in enumerate(after, start=1):
            feeding = slots[2 * board - 2 : 2 * board]
            games = [p for p in state.of_round(round_) if p.board == board]
            if holder is not None:
                assert holder in feeding
            if not games:
                continue
            last = max(games, key=lambda p: p.game)
            assert set(last.seats) <= set(feeding)
            decided = last.decided
            if decided.winner is not None:
                assert holder == last.seats[decided.winner]
            elif decided.how == "played":
                assert last.game == replays + 1 and holder == min(last.seats, key=state.seed_of)
            else:
                assert holder is None
            losers = set(last.seats) - {holder}
            assert not losers & {p for later in state.bracket[round_:] for p in later if p is not None}
    if leave_rate == 0:
        assert state.winner is not None


# --- arena ------------------------------------------------------------------------------------------
@SETTINGS
@given(count=players, seed=seeds, leave_rate=leave_rates)
def test_arena_never_pairs_a_busy_player(count, seed, leave_rate):
    t = play("arena", count, seed, leave_rate, duration_s=120, pairing_interval_s=2)
    check_common(t)
    for before, event in states_before_each_event(t):
        if event["type"] == "round_paired":
            seated = [p for pairing in event["pairings"] for p in pairing["seats"]]
            assert not set(seated) & before.busy()
            assert all(before.entrant(p).status == "active" for p in seated)


# --- the matching -----------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(
    size=st.sampled_from([2, 4, 6, 8]),
    levels=st.integers(1, 3),
    hard=st.integers(0, 2),
    seed=seeds,
)
def test_best_pairing_is_the_lexicographic_minimum(size, levels, hard, seed):
    rng = random.Random(seed)
    table = {
        (a, b): tuple(rng.choice([0, 0, 1, 2, 5]) for _ in range(levels))
        for a in range(size)
        for b in range(a + 1, size)
    }
    nodes = list(range(size))
    chosen = best_pairing(nodes, lambda a, b: table[a, b], hard_levels=min(hard, levels))
    assert sorted(n for pair in chosen for n in pair) == nodes

    def total(matching):
        return tuple(sum(table[pair][level] for pair in matching) for level in range(levels))

    assert total(chosen) == min(total(m) for m in _perfect_matchings(nodes))


def _perfect_matchings(nodes):
    if not nodes:
        yield []
        return
    head, tail = nodes[0], nodes[1:]
    for i, other in enumerate(tail):
        for rest in _perfect_matchings(tail[:i] + tail[i + 1 :]):
            yield [(head, other), *rest]


FORMAT_SETTINGS = {
    "swiss": {"rounds": 3},
    "round_robin": {"cycles": 2},
    "knockout": {"draw_replays": 2},
    "arena": {"duration_s": 600},
}
clocks = st.one_of(
    st.builds(lambda i, inc: {"initial_s": i, "increment_s": inc}, st.integers(1, 3600), st.integers(0, 60)),
    st.builds(lambda d: {"kind": "correspondence", "days_per_move": d}, st.sampled_from([1, 2, 3, 5, 7, 14])),
)


@SETTINGS
@given(format_=st.sampled_from(sorted(FORMAT_SETTINGS)), clock=st.none() | clocks, rated=st.booleans())
def test_every_match_of_a_tournament_carries_its_clock_and_rated(format_, clock, rated):
    """The clock decides a player who never comes (docs/tournaments.md, "Players who leave"): every
    match of a tournament has the tournament's clock (and its `rated`); a clockless create (refused
    by the gateway, but in logs from before that rule) folds as it did, its matches without a clock."""
    t = Tourney()
    extra = {} if clock is None else {"clock": clock}
    action = {"type": "create", "name": "c", "format": format_, "game": "strands", **FORMAT_SETTINGS[format_]}
    result = t.submit("alice", {**action, **extra, "rated": rated, "starts_at": "2023-11-14T22:14:20Z"})
    assert result["status"] == "accepted", result["reason"]
    t.register("a", "b", "c")
    t.start()
    for pairing in t.pending():
        created = create_record(t.state, pairing)["action"]
        if clock is None:
            assert "clock" not in created
        else:
            assert {key: created["clock"][key] for key in clock} == clock
        assert created.get("rated", True) is rated
