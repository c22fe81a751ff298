"""Match logs of the kinds written before correspondence clocks (Fischer clocks, untimed matches,
timeouts, bad clocks) fold to the same bytes as they did then: results, outcomes and the states the
rules worker keeps. The digests were taken from the fold before games/clocks.py existed."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from games.fold import Replayer
from games.playout import random_playout_records
from tests.support import record

FISCHER = {"initial_s": 600, "increment_s": 5}
SIDE2 = {"side": 2, "rows": ["22", "212", "22"]}
OPTIONS = {"strands": {"layout": "small-5"}, "mastermind": {}, "mana": {}, "mind_ninja": {"side": 4}}


def _playout(game: str, clock: dict | None) -> list[bytes]:
    records = random_playout_records(game, OPTIONS[game], seed=43, match_id=f"{game}-old", step_ms=7000, clock=clock)
    return [raw for raw, _ in records]


def _timeouts_and_bad_clocks() -> list[bytes]:
    """A Fischer match that times out (a claim too early first, a move after the end), and creates
    whose clocks are refused."""
    create = {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": {"layout": SIDE2}}
    return [
        record("t1", "alice", {**create, "clock": {"initial_s": 10, "increment_s": 2}}, 0),
        record("t1", "alice", {"type": "place", "cells": [[1, 0]]}, 3),
        record("t1", "alice", {"type": "claim_timeout"}, 8),
        record("t1", "plylog-timekeeper", {"type": "claim_timeout"}, 20),
        record("t1", "bob", {"type": "place", "cells": [[0, -1]]}, 21),
        record("t2", "alice", {**create, "clock": {"initial_s": -1}}, 30),
        record("t2", "alice", {**create, "clock": 3}, 31),
        record("t2", "alice", {**create, "clock": {"initial_s": 5, "days_per_move": 3}}, 32),
        record("t2", "alice", {**create, "clock": {"initial_s": 5}}, 33),
        record("t2", "bob", {"type": "resign"}, 34),
    ]


LOGS = {
    "strands-fischer": lambda: _playout("strands", FISCHER),
    "mastermind-fischer": lambda: _playout("mastermind", FISCHER),
    "mana-fischer": lambda: _playout("mana", FISCHER),
    "mind_ninja-fischer": lambda: _playout("mind_ninja", FISCHER),
    "strands-untimed": lambda: _playout("strands", None),
    "timeouts-and-bad-clocks": _timeouts_and_bad_clocks,
}

#: sha256 of each log's fold (see `fold_digest`), taken before correspondence clocks existed.
BEFORE = {
    "strands-fischer": "ae8ae1328e869322b7a063555278a3be963a7d25e466efe2115740d38d31c1b3",
    "mastermind-fischer": "792ae11ccedbeb1c719230863c5ec620c2de5511a0bfc936ae350e1cfad1f24a",
    "mana-fischer": "c59dc126febbf46d468add6a6d5e5d425215cfcbd3fc79de12039c9160c25fd6",
    "mind_ninja-fischer": "7cac73196a287e4120579be06ab481751c282161cf2cb9fbc5ebb8d6ef60f689",
    "strands-untimed": "1a30c214076daf452e68861e1ba046040fac681f93413169c5a77c74b4074c66",
    "timeouts-and-bad-clocks": "915400bdbb036fa028362c57c89aee663c4ce64fbfd5e2322b243409d55ce82f",
}


def fold_digest(records: list[bytes]) -> str:
    """The sha256 of every result and outcome record's bytes and of every changed state's JSON."""
    digest = hashlib.sha256()
    replayer = Replayer()
    for number, raw in enumerate(records, start=1):
        taken = replayer.feed(raw, {"file": "old.jsonl", "line": number})
        digest.update(orjson.dumps(taken.result))
        if taken.outcome is not None:
            digest.update(orjson.dumps(taken.outcome))
        if taken.changed:
            digest.update(taken.state.json_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize("name", sorted(LOGS))
def test_logs_written_before_correspondence_clocks_fold_to_the_same_bytes(name):
    assert fold_digest(LOGS[name]()) == BEFORE[name]


if __name__ == "__main__":  # prints the digests (run against the code the logs must still fold as)
    for log_name, make in LOGS.items():
        print(f'    "{log_name}": "{fold_digest(make())}",')
