"""Mind Ninja properties against the slow reference judge (tests/reference_patterns.py):

- random legal playouts, for every catalogue pattern, end with the winner the reference
  checker gives (never too early, never too late), name cells that form the pattern by
  themselves, survive a JSON round trip at every ply and refold to identical bytes;
- the incremental judge agrees with the reference after every stone, for random custom
  patterns (every primitive, both combinators, every colour) on random boards, including
  positions long after a primitive first formed;
- normalisation is idempotent.
"""

from __future__ import annotations

import random

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.fold import Replayer, encode
from games.match import MatchState
from games.mind_ninja import GAME, MindNinjaState, pattern_formed
from games.mind_ninja_patterns import CATALOGUE_IDS, leaf_holds, normalise_pattern
from tests import reference_patterns as reference
from tests.support import Match

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _play(pattern: dict, side: int, seed: int) -> Match:
    """A random legal game (the game's own random bot) with `pattern` as the chosen pattern."""
    rng = random.Random(seed)
    match = Match("mn")
    match.create("mind_ninja", {"side": side})
    while match.state.status != "over":
        assert len(match.records) < 2000
        state = match.state
        seat = state.to_move()[0]
        if state.board.phase == "pattern":
            action = {"type": "choose_pattern", "pattern": pattern}
        else:
            action = GAME.random_action(state.board, seat, rng)
        match.ok(state.seats[seat], action)
    return match


def _restricted(board: str, cells: list[int]) -> str:
    keep = set(cells)
    return "".join(c if i in keep else "." for i, c in enumerate(board))


@pytest.mark.parametrize("pattern_id", CATALOGUE_IDS)
@pytest.mark.parametrize("side", [4, 5])
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_catalogue_playouts_end_as_the_reference_says(pattern_id, side, seed):
    played = _play({"id": pattern_id}, side, seed)
    final: MindNinjaState = played.state.board
    pattern = orjson.loads(final.pattern)
    geometry = final.geometry
    # Every position judged (after the role choice and after each placement) until the end.
    judged = [
        s.state.board
        for s in played.steps
        if s.state.board.phase in ("play", "over") and s.state.board.builder is not None
    ]
    judged = [b for n, b in enumerate(judged) if n == 0 or b.board != judged[n - 1].board or b.phase == "over"]
    for position in judged[:-1]:
        assert position.phase == "play"
        assert not reference.formed(pattern, position.board, side), (
            f"formed but not ended:\n{geometry.render(position.board)}"
        )
        assert "." in position.board
    outcome = played.state.outcome
    assert final.phase == "over"
    if reference.formed(pattern, final.board, side):
        assert outcome["reason"] == "pattern_formed" and outcome["winner"] == final.builder
        cells = outcome["scores"]["cells"]
        if not pattern["full_board"]:
            assert cells, "the builder's winning cells are named"
            indices = [geometry.index[tuple(c)] for c in cells]
            assert reference.holds(pattern["def"], _restricted(final.board, indices), side), cells
    else:
        assert outcome["reason"] == "board_full" and outcome["winner"] == 1 - final.builder
        assert "." not in final.board
    assert outcome["scores"]["pattern"] == pattern_id

    # JSON round trip at every ply; the same log folds to the same bytes.
    for taken in played.steps:
        assert MatchState.from_json(orjson.loads(orjson.dumps(taken.state.to_json()))) == taken.state
    again = Replayer()
    assert [encode(s.result) for s in played.steps] == [
        encode(again.feed(raw, {"file": "test", "line": n}).result) for n, raw in enumerate(played.records, 1)
    ]


# --- random custom patterns -------------------------------------------------------------------------
def random_shape(rng: random.Random) -> list[list[int]]:
    cells = [(0, 0)]
    steps = ((1, 0), (1, -1), (0, -1), (-1, 0), (-1, 1), (0, 1))
    while len(cells) < rng.randint(2, 5):
        q, r = rng.choice(cells)
        dq, dr = rng.choice(steps)
        if (q + dq, r + dr) not in cells:
            cells.append((q + dq, r + dr))
    return [[q + 3, r - 1] for q, r in cells]  # anywhere: shapes are translation free


def random_primitive(rng: random.Random) -> dict:
    kind = rng.choice(
        ["row", "group", "connect", "fork", "bridge", "ring", "ring", "shape", "shape", "odd", "equicolored"]
    )
    params: dict = {}
    if kind not in ("odd", "equicolored") and rng.random() < 0.85:
        params["color"] = rng.choice(["red", "blue", "any"])
    if kind == "row":
        params["n"] = rng.randint(2, 5)
    elif kind == "group":
        params["size"] = rng.randint(2, 14)
    elif kind == "connect":
        mode = rng.choice(["any", "opposite", "alternate"])
        params["mode"] = mode
        if mode == "any":
            params["edges"] = rng.randint(1, 5)
    elif kind == "fork" and rng.random() < 0.8:
        params["sides"] = rng.randint(1, 4)
    elif kind == "shape":
        params["cells"] = random_shape(rng)
    elif kind == "odd" and rng.random() < 0.8:
        params["k"] = rng.randint(1, 6)
    return {kind: params}


def random_def(rng: random.Random, depth: int = 0) -> dict:
    if depth < 2 and rng.random() < 0.35:
        return {rng.choice(["all", "any"]): [random_def(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    return random_primitive(rng)


def _start(pattern: dict, side: int) -> MindNinjaState:
    state = GAME.initial({"side": side}, "x")
    state = GAME.evolve(state, {"type": "bidding_closed", "chooser": 0, "inventor": 1, "free_moves": 0})
    return GAME.evolve(state, {"type": "pattern_chosen", "seat": 1, "pattern": normalise_pattern(pattern, side)})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_incremental_judge_agrees_with_reference_after_every_stone(seed):
    rng = random.Random(seed)
    side = rng.randint(3, 6)
    pattern = {"id": "custom", "name": "random", "colors": "either", "def": random_def(rng)}
    state = _start(pattern, side)
    normalised = orjson.loads(state.pattern)
    leaves = state.compiled.leaves
    geometry = state.geometry
    bias = rng.choice([0.5, 0.7, 0.85])
    order = list(range(geometry.size))
    rng.shuffle(order)
    for cell in order:
        colour = "red" if rng.random() < bias else "blue"
        state = GAME.evolve(
            state,
            {"type": "stones_set_up", "seat": 1, "stones": [{"cell": list(geometry.cells[cell]), "color": colour}]},
        )
        full = state.empty == 0
        for leaf in leaves:
            if leaf.full_board and not full:
                continue
            expected = reference.holds({leaf.kind: leaf.params}, state.board, side)
            assert leaf_holds(leaf, state) == expected, (leaf.kind, leaf.params, geometry.render(state.board))
        assert pattern_formed(state) == reference.formed(normalised, state.board, side)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_holes_count_is_the_ring_test(seed):
    """Dense single-colour fills: ring (holes > 0) equals the flood-fill definition, per colour,
    at every stone, including when a hole's last cell gets filled."""
    rng = random.Random(seed)
    side = rng.randint(3, 5)
    state = _start({"id": "custom", "def": {"any": [{"ring": {"color": "red"}}, {"ring": {"color": "blue"}}]}}, side)
    geometry = state.geometry
    red, blue = state.compiled.leaves
    bias = rng.choice([0.6, 0.8, 0.95])
    for cell in rng.sample(range(geometry.size), geometry.size):
        colour = "red" if rng.random() < bias else "blue"
        state = GAME.evolve(
            state,
            {"type": "stones_set_up", "seat": 1, "stones": [{"cell": list(geometry.cells[cell]), "color": colour}]},
        )
        assert leaf_holds(red, state) == reference.ring(state.board, side, "R"), geometry.render(state.board)
        assert leaf_holds(blue, state) == reference.ring(state.board, side, "B"), geometry.render(state.board)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_normalisation_is_idempotent(seed):
    rng = random.Random(seed)
    side = rng.randint(3, 10)
    if rng.random() < 0.5:
        pattern = {"id": "custom", "def": random_def(rng)}
        if rng.random() < 0.5:
            pattern["colors"] = rng.choice(["fixed", "either"])
    else:
        pattern_id = rng.choice(CATALOGUE_IDS)
        from games.mind_ninja import random_params

        pattern = {"id": pattern_id, "params": random_params(pattern_id, side, rng)}
    once = normalise_pattern(pattern, side)
    assert normalise_pattern(once, side) == once
    assert normalise_pattern(orjson.loads(orjson.dumps(once)), side) == once
