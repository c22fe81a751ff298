"""Small pieces of the tournament service's side: bot entries, reserved match ids, the views, the
joins the service writes, the gateway's checks of a create and of whom an entry names."""

from __future__ import annotations

import orjson
import pytest

from games.timeutil import from_ms
from games.tournaments import create_record, match_id_of, read, step
from services.bots.players import BotPlayers, our_rejected_move
from services.common.tournament_store import summary_of, view_of
from services.gateway.errors import ApiError
from services.gateway.tournaments import TOURNAMENT_MATCH_ID, check_named_player, create_action
from services.tournaments.service import join_records
from tests.tournament_support import Tourney


def test_a_bot_entry_is_played_by_its_bot_and_moves_under_an_event_id_of_the_grammar():
    players = BotPlayers(["random"], b"k" * 32)
    assert players.bot_of("bot:random~3") is players.bot_of("bot:random") is players.bots["bot:random"]
    assert players.bot_of("bot:nobody~1") is None and players.bot_of("random~1") is None
    assert players.plays_in({"seats": ["ann~x", "bot:random~2"]})
    turns = players.turns(
        {"status": "active", "match_id": "m", "seq": 4, "seats": ["a", "bot:random~2"], "to_move": [1]}
    )
    assert [t.player for t in turns] == ["bot:random~2"]
    rejected = {"status": "rejected", "player": "bot:random~2", "event_id": "x", "reason": {"code": "illegal"}}
    assert our_rejected_move(rejected, players)


def test_every_pairing_match_id_is_reserved_and_no_ordinary_id_is():
    for args in ((1, 1), (12, 30), (3, 2, 2)):
        assert TOURNAMENT_MATCH_ID.search(match_id_of("spring-open", *args))
    for ordinary in ("m-7f3a9c", "round-r1", "r1b1x", "cup-r1b"):
        assert not TOURNAMENT_MATCH_ID.search(ordinary)


def test_the_view_is_json_and_names_every_pairing_with_its_result():
    tourney = Tourney()
    tourney.create("round_robin", rounds=None)
    tourney.register("ann", "ben", "cat", "dan")
    tourney.start()
    first = tourney.pending()[0]
    tourney.play(first, first.seats[0])
    assert tourney.state is not None
    view = orjson.loads(orjson.dumps(view_of(tourney.state)))
    assert {p["match_id"] for p in view["pairings"]} == {p.match_id for p in tourney.state.pairings}
    decided = next(p for p in view["pairings"] if p["match_id"] == first.match_id)
    assert decided["result"]["winner"] == 0 and decided["result"]["at"]
    assert [p["round"] for p in view["current"]] == [view["round"]] * len(view["current"])
    assert summary_of(view)["players"] == 4 and summary_of(view)["status"] == "running"


CREATE = {"name": "Cup", "format": "knockout", "game": "strands", "starts_at": "2030-01-01T00:00:00Z"}


def test_the_gateway_refuses_a_tournament_without_a_clock_and_says_what_to_add():
    """The door refuses it (the fold takes it, as logs written before this rule have it)."""
    for body in (CREATE, {**CREATE, "clock": None}):
        with pytest.raises(ApiError) as refused:
            create_action(body)
        assert refused.value.status == 422 and refused.value.code == "illegal"
        assert '"initial_s"' in refused.value.message and "correspondence" in refused.value.message
    for clock in ({"initial_s": 300, "increment_s": 2}, {"kind": "correspondence", "days_per_move": 3}):
        tournament_id, action = create_action({**CREATE, "clock": clock, "tournament_id": "cup"})
        assert tournament_id == "cup" and action["type"] == "create"
        assert {key: action["clock"][key] for key in clock} == clock
    with pytest.raises(ApiError) as malformed:
        create_action({**CREATE, "clock": {"initial_s": 300}, "colour": "red"})
    assert malformed.value.code == "malformed"


def test_through_the_gateway_nobody_enters_another_person_and_only_the_creator_withdraws_one():
    """A guest creator could register any player id, a stranger who then lost on time, rated."""
    for kind in ("register", "withdraw"):
        for player in (None, "ann~1", "bot:random~2"):  # oneself, or a bot (the fold: the creator only)
            check_named_player(kind, "ann~1", player, creator="ann~1")
            check_named_player(kind, "ann~1", player, creator="cat~3")
    with pytest.raises(ApiError) as refused:
        check_named_player("register", "ann~1", "ben~2", creator="ann~1")  # not even the creator
    assert refused.value.status == 403 and refused.value.code == "forbidden" and "ben~2" in refused.value.message
    check_named_player("withdraw", "ann~1", "ben~2", creator="ann~1")  # an organiser's power
    for creator in ("cat~3", None):  # anyone else, or a tournament the gateway does not know
        with pytest.raises(ApiError) as refused:
            check_named_player("withdraw", "ann~1", "ben~2", creator=creator)
        assert refused.value.status == 403 and refused.value.code == "forbidden"


def test_the_service_stamps_its_joins_with_the_pairing_time_so_coming_back_late_forfeits_nobody():
    """The service was away longer than forfeit_wait_s when a round was paired: the joins it writes
    on its return fold at the pairing's time, so the match it just created is not double-forfeited.
    Stamped with the wall time (as they were), the fold took them as late and forfeited both."""
    t = Tourney()
    t.create("knockout", forfeit_wait_s=30)
    t.register("a", "b", "c", "d")
    t.start()
    pairing = t.pending()[0]
    joins = join_records("cup", pairing)
    assert joins == join_records("cup", pairing)  # a re-sent join: the same bytes
    assert {join["at"] for join in joins} == {create_record(t.state, pairing)["at"]}
    back_ms = pairing.paired_ms + 10 * 60_000  # the service's wall time when it writes them
    on_time, late = t.state, t.state
    for join in joins:
        on_time = step(on_time, read(orjson.dumps(join))).state
        taken = step(late, read(orjson.dumps({**join, "at": from_ms(back_ms)})))  # what it wrote before
        assert taken.result["status"] == "rejected"  # judged after every forfeit wait had passed
    tick = {**joins[0], "event_id": f"tick:{back_ms}", "action": {"type": "tick"}, "at": from_ms(back_ms)}
    on_time, late = (step(state, read(orjson.dumps(tick))).state for state in (on_time, late))
    assert on_time.pairing(pairing.match_id).decided is None
    assert set(on_time.pairing(pairing.match_id).joined) == set(pairing.seats)
    assert late.pairing(pairing.match_id).decided.how == "double_forfeit"
