"""The checks the gateway makes at its door, and the names Redis keys may have: one match-id
grammar (schemas.base.is_match_id) that `Keys` enforces, and the rules' own action-shape check
(games.match.check_action) refusing what the fold would refuse whatever the position."""

from __future__ import annotations

import pytest

from games.core import Rejected
from games.match import check_action
from schemas.base import is_match_id
from services.common.redis_keys import Keys


@pytest.mark.parametrize("match_id", ["m-1", "A_b-9", "x" * 64])
def test_match_ids_of_the_grammar_name_their_keys(match_id):
    keys = Keys("p:", 12)
    assert is_match_id(match_id)
    assert keys.match_log(match_id) == keys.match(match_id) + ":log"
    assert keys.match_outcome(match_id).endswith(f":{match_id}")


@pytest.mark.parametrize("match_id", ["", "m:log", "m-1\n", "m{0}", "m}", "m é", "m/..", "x" * 65, None, 7])
def test_no_key_is_named_after_an_id_outside_the_grammar(match_id):
    keys = Keys("p:", 12)
    assert not is_match_id(match_id)
    for name in (keys.match, keys.match_log, keys.match_outcome):
        with pytest.raises(ValueError, match="not a match id"):
            name(match_id)


def test_a_match_id_cannot_name_another_matchs_log():
    keys = Keys("p:", 1)  # one partition: every match shares the hash tag
    with pytest.raises(ValueError):
        keys.match("m-1:log")
    assert keys.match_log("m-1") != keys.match("m-1")


@pytest.mark.parametrize(
    ("game", "action"),
    [
        ("strands", {"type": "place", "cells": [[0, 0]]}),
        ("mastermind", {"type": "guess", "code": [0, 1, 2, 3]}),  # legal or not is the position's
        ("mind_ninja", {"type": "bid", "value": 3}),
        ("mana", {"type": "resign"}),
        ("mana", {"type": "claim_timeout"}),
        ("strands", {"type": "vacation", "days": 3}),  # the one lifecycle action with a field
        ("mana", {"type": "end_vacation"}),
    ],
)
def test_actions_of_the_games_shape_pass_the_door(game, action):
    check_action(game, action)


@pytest.mark.parametrize(
    ("game", "action"),
    [
        ("strands", {"type": "place", "cells": [[0, 0]], "junk": "x"}),
        ("strands", {"type": "place", "cells": "everywhere"}),
        ("strands", {"type": "bid", "value": 1}),  # another game's
        ("mastermind", {"type": "guess", "code": [True, 1, 2, 3]}),
        ("mind_ninja", {"type": "resign", "why": "x"}),
        ("mana", {"type": "create", "game": "mana", "seats": [None, None]}),
        ("mana", {"type": "teleport"}),
        ("strands", {"type": "vacation"}),
        ("strands", {"type": "vacation", "days": 0}),
        ("strands", {"type": "vacation", "days": "3"}),
        ("strands", {"type": "vacation", "days": 3, "junk": 1}),
        ("strands", {"type": "end_vacation", "days": 3}),
    ],
)
def test_actions_the_rules_would_refuse_whatever_the_position_are_refused_malformed(game, action):
    with pytest.raises(Rejected) as refused:
        check_action(game, action)
    assert refused.value.code == "malformed"
