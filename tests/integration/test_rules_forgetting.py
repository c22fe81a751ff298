"""A rules worker forgets finished matches on the real broker: FORGET_FINISHED_AFTER records of
its partition after a match ended, the worker deletes its state (a changelog tombstone) and a late
record finds no match, exactly as the refold of the log says (the audit after the test checks
every result byte for byte). Before that limit a retry is still a duplicate."""

from __future__ import annotations

import itertools
import time

import orjson
import pytest

from games.fold import FORGET_FINISHED_AFTER
from services.common.kafka_partition import partition_of
from services.common.kafka_read import read_topic
from tests.support import record

from .harness import produce, rules_worker, wait_until_answered

pytestmark = pytest.mark.integration
PARTITIONS = 2
CREATE = {
    "type": "create",
    "game": "strands",
    "seats": ["alice", "bob"],
    "options": {"layout": {"side": 2, "rows": ["22", "212", "22"]}},
}
RESIGN = {"type": "resign"}


def fillers(partition: int, count: int, start: int) -> list[tuple[bytes, bytes]]:
    """Moves of matches that do not exist, all on `partition` (each is answered unknown_match)."""
    keys = (f"ghost-{n}" for n in itertools.count(start))
    homed = (key for key in keys if partition_of(key.encode(), PARTITIONS) == partition)
    return [
        (key.encode(), record(key, "eve", {"type": "place", "cells": [[1, 0]]}, 0))
        for key in itertools.islice(homed, count)
    ]


def test_a_finished_match_is_forgotten_after_the_limit_and_its_state_deleted(
    kafka_bootstrap, contract_topics, tmp_path
):
    topics = contract_topics(partitions=PARTITIONS)
    match = "m-forgotten"
    home = partition_of(match.encode(), PARTITIONS)
    ended = [(match.encode(), record(match, "alice", CREATE, 0)), (match.encode(), record(match, "alice", RESIGN, 1))]
    retry = (match.encode(), record(match, "alice", RESIGN, 1))  # offsets: create 0, resign 1 (the end)
    half = FORGET_FINISHED_AFTER // 2
    traffic = [
        *ended,
        *fillers(home, half, 0),
        retry,  # at offset half + 2: remembered
        *fillers(home, FORGET_FINISHED_AFTER - half, 10**6),
        retry,
    ]  # at FORGET_FINISHED_AFTER + 3
    worker = rules_worker(kafka_bootstrap, topics, tmp_path, PLYLOG_RULES_SWEEP_INTERVAL_S="0.2")
    try:
        worker.start()
        worker.wait_ready()
        produce(kafka_bootstrap, topics.moves, traffic)
        wait_until_answered(kafka_bootstrap, topics, len(traffic), timeout=180, workers=[worker])
        wait_for_forgotten(worker, 1)
    finally:
        worker.stop()
    answers = [
        orjson.loads(r.value) for r in read_topic(kafka_bootstrap, topics.results, [home]) if r.key == match.encode()
    ]
    by_offset = {a["source"]["offset"]: a for a in answers}
    assert by_offset[half + 2]["duplicate"] is True and by_offset[half + 2]["seq"] == 2
    late = by_offset[FORGET_FINISHED_AFTER + 3]
    assert late["status"] == "rejected" and late["reason"]["code"] == "unknown_match" and late["view"] is None
    changelog = [r for r in read_topic(kafka_bootstrap, topics.rules_changelog, [home]) if r.key == match.encode()]
    assert changelog[-1].value is None, "the forgotten match's state was not deleted"
    assert orjson.loads(changelog[-2].value)["finished_in"] == home


def wait_for_forgotten(worker, count: int, timeout: float = 30.0) -> None:
    """Until the worker's totals (metrics.json beside its data, written every 5 s) count `count`
    forgotten matches: the sweep ran and deleted them."""
    path = worker.dir / "data" / worker.name / "metrics.json"
    deadline = time.monotonic() + timeout
    while not (path.exists() and _totals(path).get("forgotten", 0) >= count):
        assert time.monotonic() < deadline, (
            f"the worker forgot fewer than {count} matches in {timeout:g} s\n{worker.tail()}"
        )
        time.sleep(0.3)


def _totals(path) -> dict:
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:  # caught while the worker rewrites it
        return {}
