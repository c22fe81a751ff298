"""Mana, rule by rule, through the real fold (given a position, when an action, then events).

Positions for scenarios are built with `games.mana.position` from a picture (ranks 6 down
to 1, as in the rules file) and put into a freshly created match; the fold continues from
there exactly as the rules worker would.
"""

from __future__ import annotations

import random

import orjson
import pytest

from games import mana as mana_module
from games.fold import read, step
from games.mana import GAME, MARKS, ROUTES, SQUARES, Mana, ManaState, position
from tests.support import Match

BLACK, WHITE = "alice", "bob"
DIAGRAM = """
1 2 2 3 1 2
3 1 3 1 3 2
2 3 1 2 1 3
2 1 3 2 3 1
1 3 1 3 1 2
3 2 2 1 3 2
"""


def pic(text: str) -> str:
    """A board string (a1..f1, ..., a6..f6) from a picture: rank 6 first, spaces ignored."""
    rows = [row.replace(" ", "") for row in text.strip().splitlines()]
    assert len(rows) == 6 and all(len(r) == 6 for r in rows), rows
    return "".join(reversed(rows))


def started(black="c1", white="f6", options=None) -> Match:
    m = Match()
    m.create("mana", options)
    m.ok(BLACK, {"type": "place_daimyo", "square": black})
    m.ok(WHITE, {"type": "place_daimyo", "square": white})
    return m


def match_at(state: ManaState) -> Match:
    """A match whose game state is `state` (options taken from it), ready to fold on."""
    m = Match()
    m.create("mana", {"max_plies": state.max_plies, "bird_blocks": state.bird_blocks})
    m.replayer.states[m.match_id] = m.state.evolved(board=state)
    return m


def probe(m: Match, player: str, action: dict) -> dict:
    """The result the fold would give, without changing the match."""
    raw = orjson.dumps(
        {
            "v": 1,
            "event_id": "probe",
            "match_id": m.match_id,
            "player": player,
            "at": "2026-11-29T23:00:00Z",
            "action": action,
        }
    )
    return step(m.state, read(raw)).result


def move(frm: str, to: str, bird: str | None = None, **extra) -> dict:
    action = {"type": "move", "from": frm, "to": to, **extra}
    if bird is not None:
        action["bird"] = bird
    return action


def drop(to: str, bird: str | None = None) -> dict:
    action = {"type": "drop", "to": to}
    if bird is not None:
        action["bird"] = bird
    return action


def pairs(state: ManaState, seat: int) -> set[tuple[str, str]]:
    return {(a["from"], a["to"]) for a in GAME.legal_actions(state, seat) if a["type"] == "move"}


# --- board -------------------------------------------------------------------------------------
def test_marks_follow_the_rules_diagram_twelve_of_each():
    assert pic(DIAGRAM.replace(" ", "")) == MARKS
    assert sorted(MARKS.count(d) for d in "123") == [12, 12, 12]
    corners = {SQUARES[i]: MARKS[i] for i in (0, 5, 30, 35)}
    assert [sq for sq, n in corners.items() if n == "3"] == ["a1"]


def test_routes_never_revisit_and_have_exactly_n_steps():
    for square, routes in enumerate(ROUTES):
        n = int(MARKS[square])
        for dest, over in routes:
            r0, f0 = divmod(square, 6)
            r1, f1 = divmod(dest, 6)
            distance = abs(r0 - r1) + abs(f0 - f1)
            assert distance <= n and (n - distance) % 2 == 0 and dest != square
            assert all(
                bin(mask).count("1") == n - 1 and not mask >> square & 1 and not mask >> dest & 1 for mask in over
            )


# --- setup ----------------------------------------------------------------------------------------
def test_options_are_normalised_with_defaults():
    m = Match()
    events = m.create("mana")
    assert events[0]["options"] == {"max_plies": 300, "bird_blocks": True}
    assert m.view["phase"] == "setup" and m.view["to_move"] == [0] and m.view["board"] == "." * 36


@pytest.mark.parametrize(
    "options", [{"max_plies": 0}, {"max_plies": "300"}, {"bird_blocks": "no"}, {"bird_blocks": 1}, {"birds": True}]
)
def test_bad_options_are_malformed(options):
    m = Match()
    result = m.send(BLACK, {"type": "create", "game": "mana", "seats": [BLACK, WHITE], "options": options})
    assert result.result["status"] == "rejected" and result.result["reason"]["code"] == "malformed"


@pytest.mark.parametrize("black", ["b1", "c1", "f1"])
@pytest.mark.parametrize("white", ["b6", "c6", "f6"])
def test_daimyo_placement_black_then_white_fills_the_back_rows(black, white):
    m = Match()
    m.create("mana")
    assert m.ok(BLACK, {"type": "place_daimyo", "square": black}) == [
        {"type": "daimyo_placed", "seat": 0, "square": black}
    ]
    assert m.view["to_move"] == [1]
    m.ok(WHITE, {"type": "place_daimyo", "square": white})
    board = m.view["board"]
    assert board[:6] == "".join("D" if SQUARES[i] == black else "R" for i in range(6))
    assert board[30:] == "".join("d" if SQUARES[i] == white else "r" for i in range(30, 36))
    assert board[6:30] == "." * 24
    assert m.view["phase"] == "play" and m.view["to_move"] == [0]
    assert m.view["bird"] is None and m.view["mana"] is None and m.view["disobey"] is True


@pytest.mark.parametrize(
    "square,why", [("e1", "3 marks"), ("d1", "1 mark"), ("b2", "not on your back row"), ("c6", "not on your back row")]
)
def test_black_daimyo_must_go_on_a_double_square_of_rank_1(square, why):
    m = Match()
    m.create("mana")
    message = m.rejected(BLACK, {"type": "place_daimyo", "square": square}, "illegal")
    assert "b1, c1, f1" in message and why in message


def test_white_places_second_and_on_its_own_back_row():
    m = Match()
    m.create("mana")
    assert "not 'bob''s turn" in m.rejected(WHITE, {"type": "place_daimyo", "square": "c6"}, "not_your_turn")
    m.ok(BLACK, {"type": "place_daimyo", "square": "b1"})
    message = m.rejected(WHITE, {"type": "place_daimyo", "square": "c1"}, "illegal")
    assert "b6, c6, f6" in message and "not on your back row" in message
    assert "1 mark" in m.rejected(WHITE, {"type": "place_daimyo", "square": "e6"}, "illegal")


def test_no_move_before_setup_and_no_placement_after_it():
    m = Match()
    m.create("mana")
    assert "not placed yet" in m.rejected(BLACK, move("e1", "d3", "a3"), "illegal")
    m.ok(BLACK, {"type": "place_daimyo", "square": "c1"})
    assert "not placed yet" in m.rejected(WHITE, drop("c4", "a2"), "illegal")
    m.ok(WHITE, {"type": "place_daimyo", "square": "c6"})
    assert "already placed" in m.rejected(BLACK, {"type": "place_daimyo", "square": "b1"}, "illegal")


def test_squares_are_named_a1_to_f6():
    m = started()
    assert m.rejected(BLACK, move("e1", "g3", "a3"), "malformed")
    assert m.rejected(BLACK, move("e1", "d3", "a7"), "malformed")
    assert m.rejected(BLACK, {"type": "move", "from_": "e1", "to": "d3", "bird": "a3"}, "malformed")


# --- check values ----------------------------------------------------------------------------------
FIRST_MOVES = {
    "a1": {"a4", "b3", "c2"},
    "b1": {"a2", "b3", "c2"},
    "c1": {"b2", "c3", "d2"},
    "d1": {"d2"},
    "e1": {"c2", "d3", "e4", "f3"},
    "f1": {"e2", "f3"},
}


@pytest.mark.parametrize("daimyo", ["b1", "c1", "f1"])
def test_black_has_exactly_16_first_moves(daimyo):
    m = started(black=daimyo)
    expected = {(frm, to) for frm, tos in FIRST_MOVES.items() for to in tos}
    assert len(expected) == 16
    assert pairs(m.state.board, 0) == expected
    # decide agrees, square by square: exactly these (from, to) pairs are accepted (with a bird).
    for frm in FIRST_MOVES:
        for to in SQUARES:
            action = next(
                (
                    a
                    for a in GAME.legal_actions(m.state.board, 0)
                    if a["type"] == "move" and (a["from"], a["to"]) == (frm, to)
                ),
                move(frm, to, "a3"),
            )
            accepted = probe(m, BLACK, action)["status"] == "accepted"
            assert accepted == ((frm, to) in expected), (frm, to)


def test_bird_rule_after_e1_d3():
    m = started(black="c1", white="f6")
    two_marks = {SQUARES[i] for i in range(36) if MARKS[i] == "2"}
    empty_two = {sq for sq in two_marks if sq[1] not in "16"} - {"d3"}
    birds = {a.get("bird") for a in GAME.legal_actions(m.state.board, 0) if (a["from"], a["to"]) == ("e1", "d3")}
    assert birds == empty_two and "a3" in birds
    assert "2 marks" in m.rejected(BLACK, move("e1", "d3", "b2"), "illegal")  # b2 has 3 marks
    assert "arrives there occupies it" in m.rejected(BLACK, move("e1", "d3", "d3"), "illegal")
    assert "a piece stands there" in m.rejected(BLACK, move("e1", "d3", "b1"), "illegal")
    assert "bird is missing" in m.rejected(BLACK, move("e1", "d3"), "illegal")
    assert m.ok(BLACK, move("e1", "d3", "a3")) == [
        {"type": "piece_moved", "seat": 0, "piece": "ronin", "from": "e1", "to": "d3", "captured": None, "bird": "a3"}
    ]
    assert (m.view["bird"], m.view["mana"], m.view["disobey"], m.view["ply"]) == ("a3", 2, False, 1)
    # White must move a piece on a 2-square (b6, c6 or f6), each exactly 2 steps.
    white = pairs(m.state.board, 1)
    assert {frm for frm, _ in white} == {"b6", "c6", "f6"}
    assert white == {
        ("b6", "a5"),
        ("b6", "b4"),
        ("b6", "c5"),
        ("c6", "b5"),
        ("c6", "c4"),
        ("c6", "d5"),
        ("f6", "e5"),
        ("f6", "f4"),
    }
    message = m.rejected(WHITE, move("e6", "e5", "a2"), "illegal")
    assert "mana is 2" in message and "b6, c6, f6" in message and "e6 has 1 mark" in message
    message = m.rejected(WHITE, move("c6", "c5", "a2"), "illegal")
    assert "exactly 2 steps" in message and "c5 cannot be reached" in message and "c4, b5, d5" in message


# --- moving ------------------------------------------------------------------------------------------
def test_u_shaped_three_step_move():
    state = position(
        pic("""
        .....d
        ......
        ......
        ......
        ......
        R.D...
    """)
    )
    assert ("a1", "b1") in pairs(state, 0)  # a1 -> a2 -> b2 -> b1
    m = match_at(state)
    events = m.ok(BLACK, move("a1", "b1", "a3"))
    assert events[0]["to"] == "b1" and m.view["board"][:3] == ".RD"


@pytest.mark.parametrize("blocker", ["R", "r"])  # own piece, enemy piece: neither may be passed over
def test_paths_are_blocked_by_any_piece(blocker):
    board = pic(f"""
        .....d
        ......
        ......
        {blocker}.....
        ......
        R.D...
    """)
    m = match_at(position(board))
    message = m.rejected(BLACK, move("a1", "a4", "d4"), "illegal")
    assert "every 3-step path from a1 to a4 is blocked, by pieces on a3" in message
    assert "reachable now:" in message


def test_a_path_is_free_when_another_route_avoids_the_blocker():
    m = match_at(
        position(
            pic("""
        .....d
        ......
        ......
        ......
        .r....
        R.D...
    """)
        )
    )
    m.ok(BLACK, move("a1", "b3", "c2"))  # a1-a2-a3-b3 avoids b2


@pytest.mark.parametrize("blocks", [True, False])
def test_the_bird_blocks_paths_and_landing_unless_bird_blocks_is_false(blocks):
    board = pic("""
        .....d
        ......
        ......
        ......
        ......
        R...D.
    """)  # Black has pieces on 3-squares only (a1, e1), so it is free under mana 1 or 2
    m = match_at(position(board, bird="a3", bird_blocks=blocks))  # a1 -> a4 passes a2, a3
    assert m.state.board.disobey is True
    result = probe(m, BLACK, move("a1", "a4", "d4"))
    if blocks:
        assert result["status"] == "rejected"
        assert "blocked, by the bird on a3" in result["reason"]["message"]
    else:
        assert result["status"] == "accepted"
    m = match_at(position(board, bird="b3", bird_blocks=blocks))  # every route a1 -> b3 ends on the bird
    result = probe(m, BLACK, move("a1", "b3", "c2"))
    if blocks:
        assert result["status"] == "rejected"
        assert "the bird on b3 blocks landing" in result["reason"]["message"]
    else:
        assert result["status"] == "accepted"
        message = probe(m, BLACK, move("a1", "b3", "b3"))["reason"]["message"]
        assert "arrives there occupies it" in message  # the bird never sits under a piece


def test_own_piece_on_target_and_wrong_distance_are_named():
    m = started()
    message = m.rejected(BLACK, move("a1", "b1", "a3"), "illegal")
    assert "b1 holds your own Ronin" in message
    message = m.rejected(BLACK, move("d1", "d3", "a3"), "illegal")
    assert "d1 has 1 mark, so its piece moves exactly 1 step" in message and "reachable now: d2" in message
    message = m.rejected(BLACK, move("e1", "e5", "a5"), "illegal")
    assert "exactly 3 steps" in message and "e5 cannot be reached" in message and "c2, d3, f3, e4" in message
    # e2 is 3 steps away only by the U-turns e1-d1-d2-e2 and e1-f1-f2-e2: own pieces block both.
    message = m.rejected(BLACK, move("e1", "e2", "a2"), "illegal")
    assert "every 3-step path from e1 to e2 is blocked, by pieces on d1, f1" in message


def test_moving_nothing_or_the_enemy_is_refused():
    m = started()
    assert "no piece on d4" in m.rejected(BLACK, move("d4", "d5", "b5"), "illegal")
    assert "is White's" in m.rejected(BLACK, move("e6", "e5", "b5"), "illegal")


def test_capture_of_a_ronin_goes_to_its_owners_reserve():
    m = match_at(
        position(
            pic("""
        .....d
        ......
        ......
        ......
        ...r..
        ..DR..
    """)
        )
    )
    events = m.ok(BLACK, move("d1", "d2", "a1"))  # d2 has 3 marks
    assert events == [
        {
            "type": "piece_moved",
            "seat": 0,
            "piece": "ronin",
            "from": "d1",
            "to": "d2",
            "captured": "ronin",
            "bird": "a1",
        }
    ]
    assert m.view["reserves"] == [0, 1] and m.view["board"][9] == "R" and m.view["mana"] == 3
    # White has no piece on a 3-square: free, may drop its captured Ronin.
    assert m.view["disobey"] is True
    assert m.ok(WHITE, drop("d4", "a3"))[0] == {"type": "ronin_dropped", "seat": 1, "to": "d4", "bird": "a3"}
    assert m.view["reserves"] == [0, 0] and m.view["mana"] == 2


def test_capture_of_the_daimyo_wins_and_the_bird_is_omitted():
    m = match_at(
        position(
            pic("""
        ......
        ......
        ......
        ......
        ...d..
        ..DR..
    """),
            bird="b3",
        )
    )
    assert m.state.board.mana == 1 and m.state.board.disobey is False  # d1 is on the mana: it must move
    message = m.rejected(BLACK, move("d1", "d2", "a1"), "illegal")
    assert "bird must be omitted" in message and "captures the Daimyo" in message
    events = m.ok(BLACK, move("d1", "d2"))
    assert events[0] == {
        "type": "piece_moved",
        "seat": 0,
        "piece": "ronin",
        "from": "d1",
        "to": "d2",
        "captured": "daimyo",
        "bird": None,
    }
    assert events[1]["type"] == "match_ended" and events[1]["winner"] == 0 and events[1]["reason"] == "daimyo_captured"
    assert m.view["status"] == "over" and m.view["bird"] is None and m.view["to_move"] == []
    assert m.view["outcome"] == {"winner": 0, "reason": "daimyo_captured", "scores": None}
    assert m.rejected(WHITE, move("e6", "e5", "b5"), "match_over")


def test_explicit_null_bird_is_the_same_as_omitted():
    m = match_at(
        position(
            pic("""
        ......
        ......
        ......
        ......
        ...d..
        ..DR..
    """)
        )
    )
    m.ok(BLACK, move("d1", "d2", bird=None) | {"bird": None})
    assert m.view["outcome"]["winner"] == 0


# --- the bird and the mana ---------------------------------------------------------------------------
def test_the_bird_may_stay_on_its_square():
    m = match_at(
        position(
            pic("""
        .....d
        ......
        ......
        ..R...
        ......
        D.....
    """),
            bird="a3",
        )
    )  # mana 2; Black stands on 3-squares only (a1, c3): free
    assert m.state.board.disobey is True
    events = m.ok(BLACK, move("c3", "d3", "a3"))  # c3 -> c4 -> d4 -> d3, a 2-mark arrival
    assert events[0]["bird"] == "a3" and m.view["bird"] == "a3" and m.view["mana"] == 2


def test_bird_omitted_when_no_empty_square_of_that_count_is_left():
    # Every 1-mark square is occupied but e4; f4 (3 marks) -> f5 -> e5 -> e4 fills it.
    board = pic("""
        r...r.
        .R.r..
        ..r..R
        .R...d
        r.D.R.
        ...R..
    """)
    ones = {SQUARES[i] for i in range(36) if MARKS[i] == "1"}
    assert {SQUARES[i] for i, c in enumerate(board) if c != "."} == ones - {"e4"} | {"f4"}
    m = match_at(position(board))
    assert "no empty square with 1 mark is left" in m.rejected(BLACK, move("f4", "e4", "a1"), "illegal")
    events = m.ok(BLACK, move("f4", "e4"))
    assert events[0]["bird"] is None
    # No bird, no mana: White may move any piece (as before the first move).
    assert m.view["bird"] is None and m.view["mana"] is None and m.view["disobey"] is True
    assert m.view["to_move"] == [1]


def test_disobeying_when_no_piece_stands_on_the_mana():
    state = position(
        pic("""
        .....d
        ......
        ......
        ......
        R.....
        .RD...
    """),
        bird="c3",
        reserves=(1, 0),
    )  # mana 3; Black on b1 (2), c1 (2), a2 (1)
    assert state.mana == 3 and state.disobey is True
    m = match_at(state)
    assert probe(m, BLACK, move("a2", "a3", "d3"))["status"] == "accepted"  # a2 (1 mark) -> a3 (2 marks)
    m.ok(BLACK, move("b1", "b3", "c2"))  # b1 (2 marks) -> b2 -> b3 (1 mark)
    assert m.view["mana"] == 1


def test_disobeying_when_every_piece_on_the_mana_is_blocked():
    state = position(
        pic("""
        .....d
        ......
        ......
        ......
        R.....
        RRD...
    """),
        bird="c3",
        reserves=(1, 0),
    )  # a1 (3) is Black's only piece on a 3-square and is walled in
    assert state.disobey is True
    m = match_at(state)
    assert m.view is not None
    assert probe(m, BLACK, move("b1", "b3", "c2"))["status"] == "accepted"
    assert probe(m, BLACK, drop("d4", "a4"))["status"] == "accepted"
    # Control: free a2 so a1 can move; now Black must obey.
    state = position(
        pic("""
        .....d
        ......
        ......
        ......
        ......
        RRD...
    """),
        bird="c3",
        reserves=(1, 0),
    )
    assert state.disobey is False
    m = match_at(state)
    message = m.rejected(BLACK, move("b1", "b3", "c2"), "illegal")
    assert "mana is 3 (bird on c3)" in message and "yours on a1 can move" in message and "b1 has 2 marks" in message
    message = m.rejected(BLACK, drop("d4", "a4"), "illegal")
    assert "may not drop" in message and "a1" in message and "only when disobeying" in message
    m.ok(BLACK, move("a1", "a4", "d4"))


# --- drops -------------------------------------------------------------------------------------------------
def free_with_reserve(blocks: bool = True, reserve: int = 1) -> Match:
    return match_at(
        position(
            pic("""
        .....d
        ......
        ......
        ......
        ......
        .RD...
    """),
            bird="c3",
            reserves=(reserve, 0),
            bird_blocks=blocks,
        )
    )  # mana 3; Black has no piece on a 3-square


def test_a_drop_sets_the_mana_from_its_square():
    m = free_with_reserve()
    assert m.ok(BLACK, drop("d4", "a3")) == [{"type": "ronin_dropped", "seat": 0, "to": "d4", "bird": "a3"}]
    assert m.view["reserves"] == [0, 0] and m.view["board"][21] == "R" and m.view["mana"] == 2
    assert m.view["ply"] == 1 and m.view["to_move"] == [1]


def test_drop_rejections_name_the_reason():
    m = free_with_reserve()
    assert "occupied by a Daimyo" in m.rejected(BLACK, drop("c1", "a3"), "illegal")
    assert "the bird on c3 blocks the drop" in m.rejected(BLACK, drop("c3", "e3"), "illegal")
    assert "bird is missing" in m.rejected(BLACK, drop("d4"), "illegal")
    assert "2 marks" in m.rejected(BLACK, drop("d4", "b2"), "illegal")
    assert "arrives there occupies it" in m.rejected(BLACK, drop("d4", "d4"), "illegal")
    m = free_with_reserve(reserve=0)
    assert "no captured Ronin" in m.rejected(BLACK, drop("d4", "a3"), "illegal")


def test_drop_on_the_bird_square_when_the_bird_does_not_block():
    m = free_with_reserve(blocks=False)
    assert "arrives there occupies it" in m.rejected(BLACK, drop("c3", "c3"), "illegal")
    m.ok(BLACK, drop("c3", "e3"))
    assert m.view["bird"] == "e3"


# --- passes and the end -----------------------------------------------------------------------------------
WALLED_WHITE = pic("""
    .Rrrrd
    ..RRrr
    ....RR
    ......
    ......
    ....D.
""")  # every White piece is walled in by its own pieces, Black's and the edge; no reserve


def test_turn_passed_when_the_opponent_has_no_legal_action():
    m = match_at(position(WALLED_WHITE))
    events = m.ok(BLACK, move("e1", "e2", "a2"))  # U-shaped: e1 -> d1 -> d2 -> e2
    assert events == [
        {"type": "piece_moved", "seat": 0, "piece": "daimyo", "from": "e1", "to": "e2", "captured": None, "bird": "a2"},
        {"type": "turn_passed", "seat": 1},
    ]
    # Black moves again under the current mana (1, bird a2): its Daimyo on e2 must move.
    assert m.view["to_move"] == [0] and m.view["mana"] == 1 and m.view["passes"] == 1 and m.view["ply"] == 1
    assert m.view["disobey"] is False
    assert "mana is 1" in m.rejected(BLACK, move("c5", "c2", "a1"), "illegal")
    # Another move, another pass: passes separated by a move are not "two in a row".
    events = m.ok(BLACK, move("e2", "e3", "a1"))
    assert [e["type"] for e in events] == ["piece_moved", "turn_passed"]
    assert m.view["status"] == "active" and m.view["passes"] == 1


def test_passes_do_not_count_as_plies():
    m = match_at(position(WALLED_WHITE, ply=8, max_plies=10))
    m.ok(BLACK, move("e1", "e2", "a2"))  # ply 9, White passes
    assert m.view["ply"] == 9 and m.view["status"] == "active"
    events = m.ok(BLACK, move("e2", "e3", "a1"))  # ply 10: the limit, no pass recorded after it
    assert [e["type"] for e in events] == ["piece_moved", "match_ended"]
    assert events[1]["winner"] is None and events[1]["reason"] == "ply_limit"


def test_two_passes_in_a_row_draw(monkeypatch):
    # Both sides stuck at once does not arise in practice (some piece always borders the open
    # board); force "no legal action" to check the mechanism end to end through the fold.
    m = match_at(position(WALLED_WHITE))
    monkeypatch.setattr(Mana, "has_action", staticmethod(lambda state: False))
    events = m.ok(BLACK, move("e1", "e2", "a2"))
    assert [e["type"] for e in events] == ["piece_moved", "turn_passed", "turn_passed", "match_ended"]
    assert events[1]["seat"] == 1 and events[2]["seat"] == 0
    assert (events[3]["winner"], events[3]["reason"]) == (None, "double_pass")
    assert m.view["ply"] == 1 and m.view["passes"] == 2


def test_two_turn_passed_events_evolve_to_a_draw():
    state = position(WALLED_WHITE, turn=1)
    once = GAME.evolve(state, {"type": "turn_passed", "seat": 1})
    assert GAME.outcome(once) is None and GAME.to_move(once) == (0,)
    twice = GAME.evolve(once, {"type": "turn_passed", "seat": 0})
    assert GAME.outcome(twice) == {"winner": None, "reason": "double_pass", "scores": None}
    assert GAME.to_move(twice) == ()


def test_ply_limit_draws_and_setup_does_not_count():
    m = started(options={"max_plies": 3})
    m.ok(BLACK, move("e1", "d3", "a3"))
    m.ok(WHITE, move("c6", "c4", "a2"))
    assert m.view["ply"] == 2 and m.view["status"] == "active"
    legal = next(iter(GAME.legal_actions(m.state.board, 0)))
    events = m.ok(BLACK, legal)
    assert events[-1]["type"] == "match_ended" and events[-1]["reason"] == "ply_limit"
    assert events[-1]["winner"] is None and m.view["outcome"]["winner"] is None


def test_daimyo_capture_on_the_last_ply_still_wins():
    m = match_at(
        position(
            pic("""
        ......
        ......
        ......
        ......
        ...d..
        ..DR..
    """),
            ply=9,
            max_plies=10,
        )
    )
    events = m.ok(BLACK, move("d1", "d2"))
    assert events[-1]["reason"] == "daimyo_captured" and events[-1]["winner"] == 0


def test_resign_ends_the_game_for_the_other_seat():
    m = started()
    m.ok(BLACK, move("e1", "d3", "a3"))
    events = m.ok(WHITE, {"type": "resign"})
    assert events[-1]["winner"] == 0 and events[-1]["reason"] == "resign"


# --- views and enumeration ----------------------------------------------------------------------------------
def test_public_view_fields():
    m = started()
    m.ok(BLACK, move("e1", "d3", "a3"))
    view = m.view
    assert view["board"] == "RRDR.R" + "." * 9 + "R" + "." * 14 + "rrrrrd"
    assert view["marks"] == MARKS
    assert {k: view[k] for k in ("bird", "mana", "reserves", "phase", "ply", "disobey", "passes")} == {
        "bird": "a3",
        "mana": 2,
        "reserves": [0, 0],
        "phase": "play",
        "ply": 1,
        "disobey": False,
        "passes": 0,
    }
    assert view["max_plies"] == 300 and view["bird_blocks"] is True


def test_legal_actions_offer_every_bird_square_and_drops_only_when_free():
    m = free_with_reserve()
    actions = list(GAME.legal_actions(m.state.board, 0))
    drops = [a for a in actions if a["type"] == "drop"]
    empties = 36 - 3 - 1  # three pieces, the bird square
    assert len({a["to"] for a in drops}) == empties
    for a in actions:
        assert probe(m, BLACK, a)["status"] == "accepted", a
    assert list(GAME.legal_actions(m.state.board, 1)) == []  # not White's turn


def test_random_action_is_legal():
    rng = random.Random(3)
    m = started()
    for _ in range(30):
        if m.view["status"] != "active":
            break
        state = m.state.board
        action = GAME.random_action(state, state.turn, rng)
        m.ok([BLACK, WHITE][state.turn], action)


def test_render_shows_marks_pieces_bird_mana_and_reserves():
    m = started()
    m.ok(BLACK, move("e1", "d3", "a3"))
    text = GAME.render(m.state.board)
    lines = text.splitlines()
    assert lines[0].split() == list("abcdef")
    assert lines[1].split() == ["6", "1r", "2r", "2r", "3r", "1r", "2d"]
    assert lines[4].split() == ["3", "2*", "1.", "3.", "2R", "3.", "1."]
    assert "mana 2 (bird on a3)" in text and "reserves Black 0, White 0" in text and "White to move" in text


def test_state_json_round_trip():
    state = position(WALLED_WHITE, bird="a2", reserves=(0, 2), ply=5)
    assert ManaState.model_validate(state.model_dump(mode="json")) == state
    assert mana_module.free_of_mana(state.board, state.bird, 0, True) == state.disobey
