"""Mana-specific properties, against a slow reference written from the rules text alone:
brute-force path enumeration (every sequence of N orthogonal directions) for moves, the
mana/disobey rule, drops and bird squares. Checked at random positions (hypothesis) and at
positions of random matches; plus invariants along random playouts.
"""

from __future__ import annotations

import random
from itertools import product

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.core import Rejected
from games.mana import GAME, ManaState, position
from tests.property import hooks_mana
from tests.support import random_playout

DIAGRAM = ["122312", "313132", "231213", "213231", "131312", "322132"]  # rank 6 first, as in the rules
MARKS = [int(c) for row in reversed(DIAGRAM) for c in row]
NAMES = [f"{'abcdef'[i % 6]}{i // 6 + 1}" for i in range(36)]
DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1))
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ref_destinations(board: str, bird: int | None, blocks: bool, start: int) -> set[int]:
    own = "DR" if board[start] in "DR" else "dr"
    n = MARKS[start]
    found = set()
    for steps in product(DIRECTIONS, repeat=n):
        rank, file = divmod(start, 6)
        visited = {start}
        ok = True
        for k, (dr, df) in enumerate(steps):
            rank, file = rank + dr, file + df
            square = rank * 6 + file
            if not (0 <= rank < 6 and 0 <= file < 6) or square in visited:
                ok = False
                break
            visited.add(square)
            bird_here = blocks and bird == square
            if k < n - 1 and (board[square] != "." or bird_here):
                ok = False
                break
            if k == n - 1 and (board[square] in own or bird_here):
                ok = False
        if ok:
            found.add(rank * 6 + file)
    return found


def ref_birds(after: str, arrival: int) -> list[int | None]:
    squares = [i for i in range(36) if after[i] == "." and MARKS[i] == MARKS[arrival]]
    return squares or [None]


def ref_legal(state: ManaState) -> set[tuple]:
    """Canonical actions (as hooks_mana.canonical) legal for the seat to move."""
    board, seat, blocks = state.board, state.turn, state.bird_blocks
    bird = None if state.bird is None else NAMES.index(state.bird)
    own = "DR" if seat == 0 else "dr"
    mine = [i for i, c in enumerate(board) if c in own]
    mana = None if bird is None else MARKS[bird]
    obey = [(s, d) for s in mine if MARKS[s] == mana for d in ref_destinations(board, bird, blocks, s)]
    free = not obey
    moves = obey if obey else [(s, d) for s in mine for d in ref_destinations(board, bird, blocks, s)]
    legal = set()
    for s, d in moves:
        after = list(board)
        after[d], after[s] = board[s], "."
        birds = [None] if board[d] in "Dd" else ref_birds("".join(after), d)
        for b in birds:
            legal.add(("move", None, NAMES[s], NAMES[d], None if b is None else NAMES[b]))
    if free and state.reserves[seat] > 0:
        for d in range(36):
            if board[d] != "." or (blocks and bird == d):
                continue
            after = board[:d] + own[1] + board[d + 1 :]
            for b in ref_birds(after, d):
                legal.add(("drop", None, None, NAMES[d], None if b is None else NAMES[b]))
    return legal


@st.composite
def positions(draw) -> ManaState:
    black_ronin = draw(st.integers(0, 5))
    white_ronin = draw(st.integers(0, 5))
    squares = draw(st.permutations(range(36)))
    board = ["."] * 36
    cells = squares[: 2 + black_ronin + white_ronin]
    board[cells[0]], board[cells[1]] = "D", "d"
    for i in cells[2 : 2 + black_ronin]:
        board[i] = "R"
    for i in cells[2 + black_ronin :]:
        board[i] = "r"
    bird = draw(st.one_of(st.none(), st.sampled_from(squares[len(cells) :])))
    reserves = (draw(st.integers(0, 5 - black_ronin)), draw(st.integers(0, 5 - white_ronin)))
    return position(
        "".join(board),
        bird=None if bird is None else NAMES[bird],
        turn=draw(st.integers(0, 1)),
        reserves=reserves,
        bird_blocks=draw(st.booleans()),
    )


def accepts(state: ManaState, action: dict) -> bool:
    try:
        GAME.decide(state, state.turn, GAME.parse_action(action), 0)
    except Rejected as rejection:
        assert rejection.code in ("illegal", "malformed") and rejection.message
        return False
    return True


@SETTINGS
@given(state=positions())
def test_legal_actions_equal_the_brute_force_reference(state):
    listed = [hooks_mana.canonical(a) for a in GAME.legal_actions(state, state.turn)]
    assert len(listed) == len(set(listed)), "no action is listed twice"
    reference = ref_legal(state)
    assert set(listed) == reference
    assert GAME.has_action(state) == bool(reference)
    mana = None if state.bird is None else MARKS[NAMES.index(state.bird)]
    own = "DR" if state.turn == 0 else "dr"
    obeying = (
        any(
            MARKS[i] == mana and ref_destinations(state.board, NAMES.index(state.bird), state.bird_blocks, i)
            for i, c in enumerate(state.board)
            if c in own
        )
        if mana
        else False
    )
    assert state.disobey == (not obeying)


@SETTINGS
@given(state=positions(), seed=st.integers(0, 2**32 - 1))
def test_decide_accepts_exactly_the_reference_actions(state, seed):
    rng = random.Random(seed)
    reference = ref_legal(state)
    for _ in range(20):
        action = hooks_mana.candidate(state, state.turn, rng)
        assert accepts(state, action) == (hooks_mana.canonical(action) in reference), action
    for action in rng.sample(sorted(reference, key=str), min(5, len(reference))):
        kind, _, frm, to, bird = action
        wire = {"type": kind, "to": to, **({"from": frm} if frm else {}), **({"bird": bird} if bird else {})}
        assert accepts(state, wire), wire


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), blocks=st.booleans())
def test_invariants_along_random_matches(seed, blocks):
    played = random_playout("mana", {"bird_blocks": blocks, "max_plies": 120}, seed)
    rng = random.Random(seed)
    for taken in played.steps:
        state: ManaState = taken.state.board
        view = taken.result["view"]
        assert len(view["board"]) == 36 and view["board"] == state.board
        if state.phase == "setup":
            continue
        for seat, (daimyo, ronin) in enumerate((("D", "R"), ("d", "r"))):
            assert state.board.count(ronin) + state.reserves[seat] == 5
            assert state.board.count(daimyo) == 1 or (
                state.phase == "over" and state.reason == "daimyo_captured" and state.winner == 1 - seat
            )
        if state.bird is not None:
            assert state.board[NAMES.index(state.bird)] == ".", "the bird never sits under a piece"
        assert view["mana"] == (None if state.bird is None else MARKS[NAMES.index(state.bird)])
        if state.phase == "play" and rng.random() < 0.3:
            assert {hooks_mana.canonical(a) for a in GAME.legal_actions(state, state.turn)} == ref_legal(state)
    final = played.state.board
    assert final.phase == "over" and final.ply <= 120
    assert final.reason in ("daimyo_captured", "ply_limit", "double_pass")
