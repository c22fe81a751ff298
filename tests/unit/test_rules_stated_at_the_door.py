"""Matches made by the matchmaker and the tournament service state the rules version their lobby
record or tournament create stated (docs/evolving.md, "Who states a version"): the pure folds copy
it into every match create they write; records that state none (every log written before
versions) make creates that state none, byte for byte as before. Pool entries of different
versions never pair."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from games.fold import Replayer
from games.matchmaking import create_record as lobby_create
from games.tournaments import create_record as tournament_create
from schemas.matchmaking import MATCHMAKER
from tests.tournament_support import Tourney
from tests.unit.test_matchmaking import STRANDS, Lobbyist, made


def _folded(create: dict[str, Any]) -> Any:
    """The rules' answer to a create record the matchmaker or the tournament service writes."""
    return Replayer().feed(orjson.dumps(create))


def _seek_match(rules: str | None) -> tuple[list[dict], dict[str, Any]]:
    lobby = Lobbyist()
    stated = {} if rules is None else {"rules": rules}
    opened = lobby.ok("ann", {"type": "seek", **STRANDS, "rating": 1500, **stated}, 0)
    accepted = lobby.ok("bob", {"type": "accept_seek", "seek_id": opened[0]["seek_id"], "rating": 1500}, 1)
    return [*opened, *accepted], lobby.steps[-1].creates[0]


def test_a_seek_stating_rules_makes_a_match_created_under_them_with_a_receipt_chain():
    events, create = _seek_match("strands/2")
    assert [e.get("rules") for e in events] == ["strands/2", None, "strands/2"]  # opened, accepted, made
    assert create == lobby_create(made(events)[0]) and create["action"]["rules"] == "strands/2"
    folded = _folded(create)
    assert folded.result["status"] == "accepted" and folded.state.rules_version == 2
    assert "chain" in folded.result and folded.result["events"][0]["rules"] == "strands/2"


def test_a_seek_stating_no_rules_folds_as_before_versions_no_rules_and_no_chain():
    events, create = _seek_match(None)
    assert all("rules" not in event for event in events)
    assert "rules" not in create["action"]
    folded = _folded(create)
    assert folded.state.rules_version == 1 and "chain" not in folded.result


def test_pool_entries_pair_only_with_entries_stating_the_same_rules():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0)  # states none: a legacy entry
    lobby.join("bob", 1500, 0, rules="strands/1")
    lobby.join("cat", 1500, 0, rules="strands/2")
    assert made(lobby.tick(600)) == []  # the windows are as wide as they get: only the versions differ
    pools = {entry.player: entry.pool_id.split("/o-")[0] for entry in lobby.lobby.waiting}
    assert pools == {"ann": "strands/untimed", "bob": "strands/1/untimed", "cat": "strands/2/untimed"}
    paired = made(lobby.join("dan", 1500, 601, rules="strands/2"))
    assert [sorted(m["seats"]) for m in paired] == [["cat", "dan"]] and paired[0]["rules"] == "strands/2"
    assert lobby.steps[-1].creates[0]["action"]["rules"] == "strands/2"
    legacy = made(lobby.join("eve", 1500, 602))
    assert sorted(legacy[0]["seats"]) == ["ann", "eve"] and "rules" not in legacy[0]
    assert "rules" not in lobby.steps[-1].creates[0]["action"]


def test_a_bot_match_from_the_pool_states_the_entrys_rules():
    lobby = Lobbyist()
    lobby.join("ann", 1500, 0, rules="strands/2", bot="bot:random", bot_after_s=5)
    paired = made(lobby.tick(6))
    assert paired[0]["via"] == "bot" and paired[0]["rules"] == "strands/2"
    assert _folded(lobby.steps[-1].creates[0]).state.rules_version == 2


@pytest.mark.parametrize("rules", ["strands/9", "mana/1"])
def test_a_lobby_record_naming_rules_that_do_not_exist_is_refused_unknown_rules(rules):
    lobby = Lobbyist()
    message = lobby.rejected("ann", {"type": "seek", **STRANDS, "rating": 1500, "rules": rules}, 0, "unknown_rules")
    assert rules in message or "version 9" in message
    lobby.rejected("bob", {"type": "join_pool", **STRANDS, "rating": 1500, "rules": rules}, 0, "unknown_rules")
    assert lobby.lobby.seeks == () and lobby.lobby.waiting == ()
    assert lobby.send(MATCHMAKER, {"type": "tick"}, 1).result["status"] == "accepted"


# --- tournaments ----------------------------------------------------------------------------------------
def _tournament(**settings: Any) -> Tourney:
    t = Tourney()
    t.create("swiss", **settings)
    t.register("a", "b")
    t.start()
    return t


def test_a_tournament_stating_rules_creates_every_match_under_them():
    t = _tournament(rules="strands/2")
    assert t.events[0]["settings"]["rules"] == "strands/2"
    assert t.state is not None
    create = tournament_create(t.state, t.pending()[0])
    assert create["action"]["rules"] == "strands/2"
    folded = _folded(create)
    assert folded.state.rules_version == 2 and "chain" in folded.result


def test_a_tournament_stating_no_rules_writes_the_settings_and_creates_it_always_wrote():
    t = _tournament()
    assert "rules" not in t.events[0]["settings"]  # the `tournament_created` bytes of before versions
    assert t.state is not None
    create = tournament_create(t.state, t.pending()[0])
    assert "rules" not in create["action"] and "chain" not in _folded(create).result


@pytest.mark.parametrize("rules", ["strands/9", "mana/1"])
def test_a_tournament_naming_rules_that_do_not_exist_is_refused_unknown_rules(rules):
    t = Tourney()
    action = {"type": "create", "name": "Cup", "format": "knockout", "game": "strands", "rules": rules}
    t.rejected("director", {**action, "starts_at": "2030-01-01T00:00:00Z"}, "unknown_rules")
    assert t.state is None
