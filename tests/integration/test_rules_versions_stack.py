"""Rules versions on the real broker: a strands/1 and a strands/2 match fold by their own rules in the
rules worker, before and after it restarts (its states recovered from the changelog by a worker with
an empty home), and a refold of the topic (`plylog audit`) agrees with every result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
import pytest

from games.fold import Replayer
from services.cli.audit import audit
from services.common.kafka_read import read_topic
from services.common.settings import Settings
from tests.support import record

from .harness import produce, rules_worker, wait_until_answered

pytestmark = pytest.mark.integration
TINY = {"layout": {"side": 2, "rows": ["22", "212", "22"]}}  # a centre 1 and six 2s
ONE_OF_TWO = {"type": "place", "cells": [[0, -1]]}  # strands/1: legal; strands/2: too few cells


def create(rules: str | None) -> dict[str, Any]:
    action = {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": TINY}
    return action if rules is None else {**action, "rules": rules}


def opening(match: str, rules: str | None) -> list[bytes]:
    return [
        record(match, "alice", create(rules), 0),
        record(match, "alice", {"type": "place", "cells": [[1, 0]]}, 1),
    ]


def keyed(records: Iterable[bytes]) -> list[tuple[bytes, bytes]]:
    return [(orjson.loads(raw)["match_id"].encode(), raw) for raw in records]


def results_by_event(bootstrap: str, topic: str) -> dict[str, dict[str, Any]]:
    return {orjson.loads(r.value)["event_id"]: orjson.loads(r.value) for r in read_topic(bootstrap, topic)}


def test_each_version_folds_its_own_match_before_and_after_a_worker_restart(kafka_bootstrap, contract_topics, tmp_path):
    topics = contract_topics(partitions=2)
    # given a legacy (v1) and a v2 match, each past its opening, and a pair that also got White's move
    before = [*opening("v1", None), *opening("v2", "strands/2"), *opening("v1b", None), *opening("v2b", "strands/2")]
    before += [record(m, "bob", ONE_OF_TWO, 2) for m in ("v1b", "v2b")]
    worker = rules_worker(kafka_bootstrap, topics, tmp_path / "first").start()
    try:
        produce(kafka_bootstrap, topics.moves, keyed(before))
        wait_until_answered(kafka_bootstrap, topics, len(before), workers=[worker])
    finally:
        worker.stop()
    # when a worker with an empty home (states recovered from the changelog) folds White's move
    after = [record(m, "bob", ONE_OF_TWO, 2) for m in ("v1", "v2")]
    after += [record("v2", "bob", {"type": "place", "cells": [[0, -1], [-1, 1]]}, 3)]
    worker = rules_worker(kafka_bootstrap, topics, tmp_path / "second").start()
    try:
        produce(kafka_bootstrap, topics.moves, keyed(after))
        wait_until_answered(kafka_bootstrap, topics, len(before) + len(after), workers=[worker])
    finally:
        worker.stop()
    # then each match folded by its own version, before and after the restart
    results = results_by_event(kafka_bootstrap, topics.results)
    for match in ("v1", "v1b"):
        assert results[f"{match}-e2"]["status"] == "accepted", results[f"{match}-e2"]
        assert "chain" not in results[f"{match}-e2"]
        assert "rules" not in results[f"{match}-e0"]["events"][0]
    for match in ("v2", "v2b"):
        assert results[f"{match}-e2"]["reason"]["code"] == "illegal", results[f"{match}-e2"]
        assert results[f"{match}-e0"]["events"][0]["rules"] == "strands/2"
    assert results["v2-e3"]["status"] == "accepted" and len(results["v2-e3"]["chain"]) == 64
    # and offline: the same records refold to the same results, and a refold of the topic agrees
    offline = Replayer()
    for raw in [*before, *after]:
        expected = offline.feed(raw).result
        assert {**results[expected["event_id"]], "source": None} == expected
    report = audit(Settings.from_env(kafka_bootstrap=kafka_bootstrap, topic_prefix=topics.prefix))
    assert report.ok, report.problems
