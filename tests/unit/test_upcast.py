"""Upcasters (schemas/upcast.py): a record of an older form, read through the current models, folds
as the same record written in the current form, on every golden log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from games.fold import Replayer
from games.match import create_match, evolve
from schemas.upcast import CURRENT, STEPS, create_0_to_1, stated_rules, upcast

GOLDEN = Path(__file__).parent.parent / "golden"
FILES = sorted(GOLDEN.glob("*/*.jsonl"))


def test_a_create_without_rules_reads_as_version_1_of_its_game_and_is_not_changed():
    legacy = {"type": "create", "game": "mana", "seats": ["a", "b"]}
    assert upcast("create", legacy) == {**legacy, "rules": "mana/1"}
    assert "rules" not in legacy and not stated_rules(legacy)
    stated = {**legacy, "rules": "mana/1"}
    assert upcast("create", stated) is stated and stated_rules(stated)


def test_every_kind_has_one_step_per_form_up_to_the_current_one():
    for kind, steps in STEPS.items():
        assert sorted(steps) == list(range(CURRENT[kind])), kind
    assert create_0_to_1 in STEPS["create"].values()


def stating_version_1(raw: bytes) -> bytes:
    """The record as today's gateway writes it: a create names its rules (`<game>/1`)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    action = data.get("action") if isinstance(data, dict) else None
    if not isinstance(action, dict) or action.get("type") != "create" or not isinstance(action.get("game"), str):
        return raw
    return orjson.dumps({**data, "action": upcast("create", action)})


def without_new_fields(result: dict[str, Any]) -> dict[str, Any]:
    """A result less what only a stated match carries: its chain and its created event's `rules` (a log
    whose creates already name their rules, such as strands/rules-versions.jsonl, carries them in both)."""
    events = [
        {k: v for k, v in e.items() if not (e["type"] == "match_created" and k == "rules")} for e in result["events"]
    ]
    return {**{k: v for k, v in result.items() if k != "chain"}, "events": events}


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_a_golden_log_folds_the_same_whether_its_creates_name_version_1_or_nothing(path: Path):
    # given a golden log as written (form 0 creates) and the same log with every create naming `<game>/1`
    lines = [orjson.loads(text) for text in path.read_bytes().splitlines()]
    legacy, current = Replayer(), Replayer()
    stated_creates = 0
    for number, line in enumerate(lines, start=1):
        raw = line["record"].encode()
        source = {"file": "golden", "line": number}
        if "key" in line:  # the placement does not matter here: both logs are read the same way
            source = {"partition": line["partition"], "offset": line["offset"]}
        # when both are folded
        old, new = legacy.feed(raw, source), current.feed(stating_version_1(raw), source)
        # then they give the same results, events and outcomes, but for the stated match's chain and rules
        assert without_new_fields(new.result) == without_new_fields(old.result), f"{path.name} line {number}"
        assert new.outcome == old.outcome
        created = [e for e in new.result["events"] if e["type"] == "match_created"]
        if created:
            stated_creates += 1
            assert created[0]["rules"] and "chain" in new.result
        if new.state is not None and old.state is not None:
            assert new.state.rules is old.state.rules  # the very same rules object folds both
    assert stated_creates == len(legacy.states)


def test_a_created_event_without_rules_evolves_to_a_version_1_unstated_match():
    create = {"type": "create", "game": "strands", "seats": ["a", "b"], "options": {"layout": "small-4"}}
    event = create_match("m", "a", create, "2026-11-29T22:00:00Z")[0][0]
    assert "rules" not in event
    state = evolve(None, event)
    assert state.rules_version == 1 and not state.rules_stated
    assert evolve(None, {**event, "rules": "strands/2"}).rules_version == 2
