"""Rules versions (docs/evolving.md): a create may state `rules`, a match is folded by its own version
for its whole life (state reloads included), and `strands/2` differs from `strands/1` in one rule."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from games.fold import Replayer
from games.match import MatchState
from games.receipts import GENESIS, canonical, next_link
from games.registry import CURRENT_RULES, RULES_VERSIONS, current_rules, get_game
from tests.support import Match

TINY = {"layout": {"side": 2, "rows": ["22", "212", "22"]}}  # a centre 1 and six 2s


def strands(rules: str | None, match_id: str = "m1") -> Match:
    match = Match(match_id)
    extra = {} if rules is None else {"rules": rules}
    match.create("strands", TINY, **extra)
    match.ok("alice", {"type": "place", "cells": [[1, 0]]})  # the opening: one 2
    return match


def test_version_2_makes_a_strands_turn_cover_exactly_its_number_and_version_1_up_to_it():
    # given the same position under strands/1 (stated or not) and strands/2
    v1, stated_v1, v2 = strands(None), strands("strands/1"), strands("strands/2")
    one_of_two = {"type": "place", "cells": [[0, -1]]}
    # when White covers one cell marked 2 while five are empty
    v1.ok("bob", one_of_two)
    stated_v1.ok("bob", one_of_two)
    message = v2.rejected("bob", one_of_two, "illegal")
    # then only version 2 refuses it, and says which rule
    assert "exactly 2 cells" in message
    assert v2.state.options["placement"] == "exact" and v1.state.options["placement"] == "up_to"


def test_a_v2_match_may_still_ask_for_up_to_placement():
    match = Match()
    match.create("strands", {**TINY, "placement": "up_to"}, rules="strands/2")
    assert match.state.rules_version == 2 and match.state.options["placement"] == "up_to"


@pytest.mark.parametrize(
    ("rules", "code", "says"),
    [
        ("strands/3", "unknown_rules", "strands has no rules version 3 (known: strands/1, strands/2)"),
        ("mana/1", "unknown_rules", "not rules of strands"),
        ("strands", "malformed", "rules"),
        ("strands/0", "malformed", "rules"),
    ],
)
def test_a_create_naming_rules_that_do_not_exist_is_rejected_saying_why(rules, code, says):
    match = Match()
    action = {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": TINY, "rules": rules}
    assert says in match.rejected("alice", action, code)


def test_the_created_event_names_the_rules_only_when_the_create_stated_them():
    legacy, stated = strands(None), strands("strands/2")
    assert "rules" not in legacy.steps[0].result["events"][0]
    assert stated.steps[0].result["events"][0]["rules"] == "strands/2"


def test_a_match_reloaded_from_its_stored_state_keeps_its_version():
    # given a v2 match whose state went through the table (JSON) and back
    match = strands("strands/2")
    stored = orjson.loads(match.state.json_bytes())
    reloaded = MatchState.from_json(stored)
    assert reloaded.rules_version == 2 and reloaded.rules_stated
    # when a worker folds the next record on the reloaded state
    fresh = Match()
    fresh.replayer.states["m1"] = reloaded
    fresh.records = list(match.records)
    # then version 2's rule still holds
    fresh.rejected("bob", {"type": "place", "cells": [[0, -1]]}, "illegal")


def test_a_state_stored_before_rules_versions_is_version_1_and_keeps_its_bytes():
    legacy = strands(None)
    stored = orjson.loads(legacy.state.json_bytes())
    assert not {"rules_version", "rules_stated", "chain"} & set(stored)
    reloaded = MatchState.from_json(stored)
    assert reloaded.rules_version == 1 and not reloaded.rules_stated and reloaded.rules is get_game("strands")


def test_a_stated_match_chains_its_accepted_results_and_a_legacy_one_does_not():
    # given a stated match with an accepted move, a rejection and a duplicate
    match = strands("strands/1")
    match.rejected("carol", {"type": "resign"}, "not_seated")
    match.send("alice", {"type": "place", "cells": [[0, 0]]}, event_id="m1-e1")  # a retry of the opening
    match.ok("bob", {"type": "place", "cells": [[0, -1], [-1, 1]]})
    results = [step.result for step in match.steps]
    # then each accepted non-duplicate result links to the one before, from the match's genesis
    link = hashlib.sha256(b"plylog-receipt/1\nm1").hexdigest()
    assert GENESIS("m1") == link
    chained = [r for r in results if r["status"] == "accepted" and not r["duplicate"]]
    for result in chained:
        public = {k: v for k, v in result.items() if k not in ("chain", "source", "duplicate")}
        link = hashlib.sha256(bytes.fromhex(link) + orjson.dumps(public, option=orjson.OPT_SORT_KEYS)).hexdigest()
        assert result["chain"] == link
    assert match.state.chain == link
    # and rejections and duplicates carry none
    assert [("chain" in r) for r in results] == [True, True, False, False, True]
    assert results[3]["duplicate"]
    assert all("chain" not in step.result for step in strands(None).steps)


def test_the_chain_hashes_canonical_json_whatever_the_key_order():
    assert canonical({"b": 1, "a": [2]}) == b'{"a":[2],"b":1}'
    assert next_link(GENESIS("x"), {"b": 1, "a": 2}) == next_link(GENESIS("x"), {"a": 2, "b": 1, "source": {}})


def test_every_current_version_is_a_shipped_one():
    assert all(CURRENT_RULES[game] in RULES_VERSIONS[game] for game in RULES_VERSIONS)
    assert current_rules("strands") == f"strands/{CURRENT_RULES['strands']}"


def test_a_refold_of_interleaved_v1_and_v2_matches_folds_each_by_its_own_version():
    v1, v2 = strands(None, "a"), strands("strands/2", "b")
    replayer = Replayer()
    for raw in [v1.records[0], v2.records[0], v1.records[1], v2.records[1]]:
        replayer.feed(raw)
    one = {"type": "place", "cells": [[0, -1]]}
    a = replayer.feed(orjson.dumps({**orjson.loads(v1.records[1]), "event_id": "x1", "player": "bob", "action": one}))
    b = replayer.feed(orjson.dumps({**orjson.loads(v2.records[1]), "event_id": "x2", "player": "bob", "action": one}))
    assert a.result["status"] == "accepted" and b.result["reason"]["code"] == "illegal"


def test_every_version_of_a_game_takes_version_1s_actions_as_the_door_assumes():
    # games.match.check_action (the gateway's door) parses actions with version 1's models
    for game, versions in RULES_VERSIONS.items():
        assert all(get_game(game, v).action_models == get_game(game).action_models for v in versions), game
