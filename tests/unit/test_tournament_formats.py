"""Given/when/then over record lists, per format: pairings, byes, withdrawals, forfeits, the knockout
draw rule, arena streaks, and tie-breaks computed by hand."""

from __future__ import annotations

from games.tournaments.round_robin import berger_round
from games.tournaments.state import bracket_order
from schemas.tournament import DIRECTOR
from tests.tournament_support import Tourney

RATED = {"A": 2000, "B": 1900, "C": 1800, "D": 1700, "E": 1600, "F": 1500}


def seats(t: Tourney) -> list[tuple[str, str]]:
    return [p.seats for p in t.pending()]


# --- Swiss ------------------------------------------------------------------------------------------
def test_swiss_pairs_top_half_against_bottom_half_then_by_score_without_rematches():
    t = Tourney()
    t.create("swiss", rounds=3)
    t.register("A", "B", "C", "D", ratings=RATED)
    t.start()
    assert seats(t) == [("A", "C"), ("D", "B")]  # 1 v 3, 2 v 4; seat 0 alternates by board
    t.play(t.board("A", "C"), "A")
    t.play(t.board("B", "D"), None)
    # A 1, B ½, D ½, C 0: B–D would be a rematch, so A–B and C–D; each takes the seat it lacks
    assert seats(t) == [("B", "A"), ("C", "D")]


def test_swiss_tie_breaks_buchholz_then_sonneborn_berger_computed_by_hand():
    t = Tourney()
    t.create("swiss", rounds=3)
    t.register("A", "B", "C", "D", ratings=RATED)
    t.start()
    t.play(t.board("A", "C"), "A")
    t.play(t.board("B", "D"), None)
    t.play(t.board("A", "B"), "A")
    t.play(t.board("C", "D"), "C")
    assert seats(t) == [("A", "D"), ("B", "C")]
    t.play(t.board("A", "D"), None)
    t.play(t.board("B", "C"), None)
    # Final scores A 2½, C 1½, B 1, D 1.
    # Buchholz: A = C 1½ + B 1 + D 1 = 3½;  C = A 2½ + D 1 + B 1 = 4½;
    #           B = D 1 + A 2½ + C 1½ = 5;  D = B 1 + C 1½ + A 2½ = 5.
    # Sonneborn–Berger: A = 1½·1 + 1·1 + 1·½ = 3;  C = 2½·0 + 1·1 + 1·½ = 1½;
    #                   B = 1·½ + 2½·0 + 1½·½ = 1¼;  D = 1·½ + 1½·0 + 2½·½ = 1¾.
    rows = {r["player"]: r for r in t.standings()}
    assert {p: (r["score"], r["buchholz"], r["sonneborn_berger"]) for p, r in rows.items()} == {
        "A": (2.5, 3.5, 3.0),
        "C": (1.5, 4.5, 1.5),
        "B": (1.0, 5.0, 1.25),
        "D": (1.0, 5.0, 1.75),
    }
    # B and D tie on points and Buchholz: Sonneborn–Berger puts D first, against the rating order.
    assert [r["player"] for r in t.standings()] == ["A", "C", "D", "B"]
    assert t.state.status == "over" and t.state.winner == "A"


def test_swiss_bye_goes_to_the_lowest_ranked_once_and_counts_a_virtual_opponent():
    t = Tourney()
    t.create("swiss", rounds=2)
    t.register("A", "B", "C", ratings=RATED)
    [_, paired] = t.start()
    assert paired["byes"] == [{"player": "C", "points": 2}] and seats(t) == [("A", "B")]
    t.play(t.board("A", "B"), "A")
    # A 1, C 1 (bye), B 0: C had its bye, so B gets this one and A meets C.
    assert t.events[-1]["byes"] == [{"player": "B", "points": 2}]
    t.play(t.board("A", "C"), "C")
    # C 2, A 1, B 1. A bye is a game against a virtual opponent with the player's own score:
    # Buchholz C = own 2 + A 1 = 3, A = B 1 + C 2 = 3, B = A 1 + own 1 = 2;
    # Sonneborn–Berger C = 2·1 + 1·1 = 3, A = 1·1 + 2·0 = 1, B = 1·0 + 1·1 = 1.
    rows = {r["player"]: (r["score"], r["buchholz"], r["sonneborn_berger"], r["byes"]) for r in t.standings()}
    assert rows == {"C": (2.0, 3.0, 3.0, 1), "A": (1.0, 3.0, 1.0, 0), "B": (1.0, 2.0, 1.0, 1)}
    assert [r["player"] for r in t.standings()] == ["C", "A", "B"]


def test_a_swiss_ends_early_when_every_pairing_left_is_a_rematch():
    t = Tourney()
    t.create("swiss", rounds=5)
    t.register("A", "B", "C", ratings=RATED)
    t.start()
    for pair in (("A", "B"), ("A", "C"), ("B", "C")):  # each round one plays, one has the bye
        t.play(t.board(*pair), pair[0])
    assert t.events[-1] == {"type": "tournament_ended", "reason": "exhausted", "winner": "A", "at": t.events[-1]["at"]}
    assert [b.player for b in t.state.byes] == ["C", "B", "A"]


def test_a_withdrawn_player_forfeits_the_pending_game_and_is_not_paired_again():
    t = Tourney()
    t.create("swiss", rounds=3)
    t.register("A", "B", "C", "D", ratings=RATED)
    t.start()
    t.play(t.board("A", "C"), "A")
    events = t.ok("B", {"type": "withdraw"})
    assert [e["type"] for e in events] == ["player_withdrew", "pairing_decided", "round_ended", "round_paired"]
    assert events[1]["how"] == "withdrawal" and events[1]["points"] == [2, 0]  # D in seat 0 wins
    assert all("B" not in pair for pair in seats(t)) and events[3]["byes"][0]["player"] == "C"
    row = t.row("B")
    assert row["status"] == "withdrawn" and row["forfeits_lost"] == 1 and row["games"] == 1
    assert t.row("D")["forfeits_won"] == 1 and t.row("D")["score"] == 1.0


def test_a_player_who_never_takes_the_seat_forfeits_after_the_wait_and_may_come_back():
    t = Tourney()
    t.create("swiss", rounds=3, forfeit_wait_s=60)
    t.register("A", "B", "C", "D", ratings=RATED)
    t.start()
    ac = t.board("A", "C")
    t.join(ac, "A")
    t.play(t.board("B", "D"), "B")
    assert t.tick(ac.paired_ms + 59_999) == []
    [forfeit, ended, paired] = t.tick(ac.paired_ms + 60_000)
    assert (forfeit["how"], forfeit["winner"], forfeit["absent"], forfeit["points"]) == ("forfeit", 0, ["C"], [2, 0])
    assert ended["type"] == "round_ended" and paired["byes"] == [{"player": "D", "points": 2}]
    assert seats(t) == [("B", "A")]  # C, absent, is not paired
    assert t.row("C")["status"] == "absent" and t.row("A")["forfeits_won"] == 1
    t.register("C")  # back: paired again from the next round, its history kept
    t.play(t.board("A", "B"), "A")
    assert t.row("C")["status"] == "active" and any("C" in pair for pair in seats(t))


def test_a_pairing_nobody_turns_up_for_is_lost_by_both():
    t = Tourney()
    t.create("swiss", rounds=2, forfeit_wait_s=60)
    t.register("A", "B", "C", "D", ratings=RATED)
    t.start()
    t.play(t.board("A", "C"), "A")
    bd = t.board("B", "D")
    [forfeit, *_] = t.tick(bd.paired_ms + 60_000)
    assert (forfeit["how"], forfeit["winner"], forfeit["absent"], forfeit["points"]) == (
        "double_forfeit",
        None,
        ["D", "B"],
        [0, 0],
    )
    assert [r["status"] for r in t.standings() if r["player"] in "BD"] == ["absent", "absent"]


def test_an_aborted_match_is_forfeited_by_the_player_who_aborted():
    t = Tourney()
    t.create("swiss", rounds=1)
    t.register("A", "B", ratings=RATED)
    t.start()
    [pairing] = t.pending()
    t.join(pairing)
    action = {"type": "match_ended", "match_id": pairing.match_id, "players": list(pairing.seats)}
    [decided, *_] = t.ok(DIRECTOR, {**action, "outcome": {"winner": None, "reason": "aborted"}, "aborted_by": "B"})
    assert decided["how"] == "forfeit" and pairing.seats[decided["winner"]] == "A" and decided["reason"] == "aborted"


# --- round robin ------------------------------------------------------------------------------------
def test_berger_tables_are_fides():
    assert [berger_round(4, r) for r in (1, 2, 3)] == [[(1, 4), (2, 3)], [(4, 3), (1, 2)], [(2, 4), (3, 1)]]
    assert berger_round(6, 2) == [(6, 4), (5, 3), (1, 2)]
    assert berger_round(6, 5) == [(3, 6), (4, 2), (5, 1)]
    assert berger_round(4, 4) == [(4, 1), (3, 2)]  # the second cycle swaps the seats


def test_round_robin_with_an_odd_field_rests_one_player_a_round_for_no_points():
    t = Tourney()
    t.create("round_robin")
    t.register("A", "B", "C", ratings=RATED)
    [_, paired] = t.start()
    assert paired["byes"] == [{"player": "A", "points": 0}] and seats(t) == [("B", "C")]


def test_round_robin_decides_the_games_of_a_player_who_left_without_matches():
    t = Tourney()
    t.create("round_robin")
    t.register("A", "B", "C", "D", ratings=RATED)
    t.start()
    t.ok("D", {"type": "withdraw"})
    t.play(t.board("B", "C"), "B")
    # round 2: D (number 4) meets C (number 3): decided for C at once, no match to create
    assert seats(t) == [("A", "B")]
    assert t.state.of_round(2)[0].decided.how == "withdrawal"
    t.play(t.board("A", "B"), "A")
    t.play(t.board("A", "C"), "C")
    assert t.state.status == "over" and t.row("D")["forfeits_lost"] == 3


# --- knockout ---------------------------------------------------------------------------------------
def test_bracket_order_puts_seeds_one_and_two_in_opposite_halves():
    assert bracket_order(8) == [1, 8, 4, 5, 2, 7, 3, 6]
    assert bracket_order(4) == [1, 4, 2, 3]


def test_knockout_gives_byes_to_the_top_seeds_and_replays_a_draw_then_the_higher_seed_advances():
    t = Tourney()
    t.create("knockout", draw_replays=1)
    t.register(*"ABCDEF", ratings=RATED)
    [_, paired] = t.start()
    assert paired["byes"] == [{"player": "A", "points": 0}, {"player": "B", "points": 0}]
    assert seats(t) == [("D", "E"), ("C", "F")]
    first = t.board("D", "E")
    events = t.play(first, None)
    assert events[-1]["pairings"][0]["seats"] == ["E", "D"] and events[-1]["pairings"][0]["game"] == 2
    assert events[-1]["pairings"][0]["match_id"] == first.match_id + "g2"
    t.play(t.board("D", "E"), None)  # drawn again, no replay left: seed 4 (D) goes through
    t.play(t.board("C", "F"), "F")
    assert t.state.bracket[1] == ("A", "D", "B", "F")
    t.play(t.board("A", "D"), "D")
    t.play(t.board("B", "F"), "B")
    t.play(t.board("B", "D"), "D")
    assert t.state.winner == "D" and [r["player"] for r in t.standings()][:2] == ["D", "B"]


def test_knockout_withdrawal_and_double_forfeit_send_the_opponent_through():
    t = Tourney()
    t.create("knockout", forfeit_wait_s=30)
    t.register("A", "B", "C", "D", ratings=RATED)
    t.start()
    t.ok("D", {"type": "withdraw"})  # A goes through
    bc = t.board("B", "C")
    t.tick(bc.paired_ms + 30_000)  # neither B nor C came: the slot is empty
    assert t.state.bracket[1] == ("A", None)
    assert t.state.status == "over" and t.state.winner == "A"


# --- arena ------------------------------------------------------------------------------------------
def test_arena_points_double_after_two_wins_until_a_game_is_not_won():
    t = Tourney()
    t.create("arena", duration_s=3600, pairing_interval_s=1)
    t.register("A", "B", ratings=RATED)
    t.start()
    for winner in ("A", "A", "A", None, "A", "B"):
        t.play(t.pending()[0], winner)
        t.wake()
    # A: 2 + 2 + 4 (on a streak) + 2 (a draw on a streak ends it) + 2 + 0 = 12; B: 1 (the draw) + 2
    assert (t.row("A")["points"], t.row("B")["points"]) == (12, 3)
    assert (t.row("A")["streak"], t.row("B")["streak"]) == (0, 1)


def test_arena_avoids_an_immediate_rematch_and_never_pairs_a_busy_player():
    t = Tourney()
    t.create("arena", duration_s=3600, pairing_interval_s=1)
    t.register("A", "B", "C", "D", ratings=RATED)
    t.start()
    assert seats(t) == [("A", "B"), ("C", "D")]
    t.join(t.board("C", "D"))
    t.play(t.board("A", "B"), "A")
    assert t.tick(t.now + 5000) == []  # A and B are free, but would meet again while C and D play
    t.play(t.board("C", "D"), "C")  # everyone is free: a wave at once
    assert sorted(sorted(p) for p in seats(t)) == [["A", "C"], ["B", "D"]]


def test_arena_ends_with_its_window_and_games_still_running_do_not_count():
    t = Tourney()
    t.create("arena", duration_s=60)
    t.register("A", "B", ratings=RATED)
    t.start()
    [pairing] = t.pending()
    t.join(pairing)
    [ended] = t.tick(t.state.started_ms + 60_000)
    assert ended["type"] == "tournament_ended" and t.pending() == []
    outcome = {"winner": 0, "reason": "largest_group"}
    late = {"type": "match_ended", "match_id": pairing.match_id, "players": list(pairing.seats), "outcome": outcome}
    t.rejected(DIRECTOR, late, "tournament_over")
    assert t.row("A")["points"] == 0


def test_a_mastermind_pairing_is_one_match_whose_rounds_give_both_players_both_roles():
    t = Tourney()
    t.create("swiss", game="mastermind", options={"rounds": 4}, rounds=1)
    t.register("A", "B", ratings=RATED)
    t.start()
    [pairing] = t.pending()
    from games.tournaments import create_record

    assert create_record(t.state, pairing)["action"]["options"] == {"rounds": 4}
