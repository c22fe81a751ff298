"""Finished matches are forgotten FORGET_FINISHED_AFTER records after their end: given a match
that ended, when a late record comes, then the worker's core and every refold answer it alike
(remembered before the limit, a match that never existed after it), and the worker's sweep finds
exactly the entries the fold has forgotten."""

from __future__ import annotations

import orjson

from games.fold import FORGET_FINISHED_AFTER, Replayer, encode
from services.rules.core import RulesCore, StateCache, Stored, forgettable, position_key, stored_offset
from tests.support import record
from tests.unit.test_rules_core import CREATE, PARTITIONS, Table, incoming

RESIGN = {"type": "resign"}
ENDED_AT = 1  # the resign's offset


def ended_match() -> tuple[RulesCore, Table, Replayer]:
    """m1 (home partition 3) created at offset 0 and resigned at offset 1, folded by the core and
    by a refold of the same partition."""
    core, table, offline = RulesCore(PARTITIONS), Table(), Replayer()
    raws = [record("m1", "alice", CREATE, 0), record("m1", "alice", RESIGN, 1)]
    table.apply(core.fold_batch([incoming(raw, offset) for offset, raw in enumerate(raws)], table.get))
    for offset, raw in enumerate(raws):
        offline.feed(raw, {"partition": 3, "offset": offset})
    return core, table, offline


def late(core: RulesCore, table: Table, offline: Replayer, raw: bytes, offset: int) -> dict:
    """Fold `raw` at `offset` (the records between were other matches'); assert the core and the
    refold agree byte for byte; the result."""
    table[position_key(3)] = b"%d" % (offset - 1)
    batch = core.fold_batch([incoming(raw, offset)], table.get)
    table.apply(batch)
    assert batch.sends[0].value == encode(offline.feed(raw, {"partition": 3, "offset": offset}).result)
    return orjson.loads(batch.sends[0].value)


def test_a_retry_of_the_last_move_is_a_duplicate_until_the_limit():
    core, table, offline = ended_match()
    result = late(core, table, offline, record("m1", "alice", RESIGN, 1), ENDED_AT + FORGET_FINISHED_AFTER)
    assert result["status"] == "accepted" and result["duplicate"] is True and result["seq"] == 2


def test_a_move_after_the_end_is_match_over_until_the_limit():
    core, table, offline = ended_match()
    result = late(
        core,
        table,
        offline,
        record("m1", "bob", {"type": "place", "cells": [[1, 0]]}, 5),
        ENDED_AT + FORGET_FINISHED_AFTER,
    )
    assert result["reason"]["code"] == "match_over" and result["view"]["status"] == "over"


def test_past_the_limit_the_match_is_unknown_and_its_id_can_be_created_again():
    core, table, offline = ended_match()
    beyond = ENDED_AT + FORGET_FINISHED_AFTER + 1
    retry = late(core, table, offline, record("m1", "alice", RESIGN, 1), beyond)
    assert retry["status"] == "rejected" and retry["reason"]["code"] == "unknown_match" and retry["view"] is None
    created = late(core, table, offline, record("m1", "carol", {**CREATE, "seats": ["carol", None]}, 9), beyond + 1)
    assert created["status"] == "accepted" and created["seq"] == 1 and created["view"]["seats"] == ["carol", None]
    assert offline.changed_at["m1"] == beyond + 1 and offline.states["m1"].seats == ("carol", None)


def test_a_match_log_file_forgets_nothing():
    replayer = Replayer()
    for n, raw in enumerate([record("m1", "alice", CREATE, 0), record("m1", "alice", RESIGN, 1)]):
        replayer.feed(raw, {"file": "m1.jsonl", "line": n + 1})
    again = replayer.feed(record("m1", "alice", RESIGN, 1), {"file": "m1.jsonl", "line": 10**9})
    assert again.result["duplicate"] is True


def test_the_sweep_finds_finished_entries_past_the_limit_of_owned_partitions_only():
    _, table, _ = ended_match()
    entries = {**table, b"m2": _active_m2().encode()}  # m2 lives on partition 0 and has not ended
    assert forgettable(entries.items(), {3: ENDED_AT + FORGET_FINISHED_AFTER}) == []
    assert forgettable(entries.items(), {3: ENDED_AT + FORGET_FINISHED_AFTER + 1, 0: 10**9}) == [(b"m1", 3)]
    assert forgettable(entries.items(), {0: 10**9}) == []  # partition 3 belongs to another worker


def _active_m2() -> Stored:
    return Stored(Replayer().feed(record("m2", "alice", CREATE, 0)).state, 0, 0)


def test_a_finished_entry_keeps_its_offset_where_recovery_reads_it_and_decodes_as_any_other():
    _, table, _ = ended_match()
    value = table[b"m1"]
    assert value.startswith(b'{"offset":1,"finished_in":3,')
    assert stored_offset(value) == ENDED_AT
    decoded = StateCache().get(b"m1", value)
    assert decoded.offset == ENDED_AT and decoded.state.status == "over"
