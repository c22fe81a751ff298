"""The rules worker's batch logic without Kafka: what it sends, what it stores, and how it
answers records that come again after a crash."""

from __future__ import annotations

import base64

import orjson
import pytest

from games.fold import Replayer, encode
from services.rules import core as rules_core
from services.rules.core import Incoming, RulesCore, position_key
from tests.support import record

PARTITIONS = 5  # m1's home partition is 3, m2's is 0 (murmur2)
SIDE2 = {"layout": {"side": 2, "rows": ["22", "212", "22"]}}
CREATE = {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": SIDE2}


def incoming(raw: bytes, offset: int, key: bytes | None = b"m1", partition: int = 3) -> Incoming:
    return Incoming(key, raw, partition, offset, "plylog.moves")


class Table(dict):
    """The stored table: what `fold_batch` wrote, as the Faust agent would store it."""

    def apply(self, batch) -> None:
        for key, (value, _partition) in batch.writes.items():
            self[key] = value

    @classmethod
    def answered_up_to(cls, offset: int, partition: int = 3) -> Table:
        """A table whose partition position says the records up to `offset` were answered."""
        return cls({position_key(partition): b"%d" % offset})


def test_a_batch_sends_one_result_per_record_and_stores_each_changed_match_once():
    core, table = RulesCore(PARTITIONS), Table.answered_up_to(9)
    records = [
        incoming(record("m1", "alice", CREATE, 0), 10),
        incoming(record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 1), 11),
        incoming(record("m1", "alice", {"type": "place", "cells": [[0, 0]]}, 2), 12),
    ]
    batch = core.fold_batch(records, table.get)
    assert [out.kind for out in batch.sends] == ["results"] * 3
    assert all(out.partition == 3 and out.key == b"m1" for out in batch.sends)
    results = [orjson.loads(out.value) for out in batch.sends]
    assert [r["status"] for r in results] == ["accepted", "accepted", "rejected"]
    assert results[1]["source"] == {"partition": 3, "offset": 11}
    assert list(batch.writes) == [b"m1", position_key(3)] and batch.writes[b"m1"][1] == 3
    assert batch.writes[position_key(3)] == (b"12", 3)
    stored = orjson.loads(batch.writes[b"m1"][0])
    assert stored["offset"] == 11 and stored["state"]["seq"] == 2
    assert batch.counts["accepted"] == 2 and batch.counts["rejected:not_your_turn"] == 1


def test_results_equal_the_offline_fold_byte_for_byte():
    core, table, offline = RulesCore(PARTITIONS), Table(), Replayer()
    raws = [
        record("m1", "alice", CREATE, 0),
        record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 1),
        record("m1", "bob", {"type": "place", "cells": [[0, -1], [-1, 1]]}, 2),
    ]
    for offset, raw in enumerate(raws):
        batch = core.fold_batch([incoming(raw, offset)], table.get)
        table.apply(batch)
        expected = encode(offline.feed(raw, {"partition": 3, "offset": offset}).result)
        assert batch.sends[0].value == expected


def test_records_redelivered_after_their_state_was_stored_are_skipped():
    """Crash after the states were stored, before the offsets were committed: the rejected
    move (bob out of turn) must not be decided again against the newer state, where it
    would be bob's turn and the move would be accepted."""
    core, table = RulesCore(PARTITIONS), Table()
    first = [
        incoming(record("m1", "alice", CREATE, 0), 0),
        incoming(record("m1", "bob", {"type": "place", "cells": [[0, -1]]}, 1), 1),
        incoming(record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 2), 2),
    ]
    table.apply(core.fold_batch(first, table.get))
    again = core.fold_batch(first, table.get)
    assert again.sends == [] and again.writes == {} and again.counts["redelivered"] == 3
    del table[position_key(3)]  # the state was stored, the position not (a crash between the two)
    again = core.fold_batch(first, table.get)
    assert again.sends == [] and again.counts["redelivered"] == 3
    assert again.writes == {position_key(3): (b"2", 3)}  # the position catches up, nothing else
    fresh = RulesCore(PARTITIONS)  # a restarted worker: nothing cached, the table restored from the changelog
    assert fresh.fold_batch(first, Table(table).get).sends == []


def test_records_redelivered_before_their_state_was_stored_give_identical_results():
    core, table = RulesCore(PARTITIONS), Table()
    batch_records = [
        incoming(record("m1", "alice", CREATE, 0), 0),
        incoming(record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 1), 1),
    ]
    first = core.fold_batch(batch_records, table.get)  # crash: never stored
    second = RulesCore(PARTITIONS).fold_batch(batch_records, table.get)
    assert [s.value for s in first.sends] == [s.value for s in second.sends]


def test_a_client_retry_with_a_new_offset_is_answered_duplicate():
    core, table = RulesCore(PARTITIONS), Table()
    create = record("m1", "alice", CREATE, 0)
    table.apply(core.fold_batch([incoming(create, 0)], table.get))
    retry = core.fold_batch([incoming(create, 1)], table.get)
    result = orjson.loads(retry.sends[0].value)
    assert result["duplicate"] is True and result["seq"] == 1 and list(retry.writes) == [position_key(3)]


@pytest.mark.parametrize(
    "raw,fragment",
    [
        (b"\x00\x01binary", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"match_id": "m1"}', "move record"),
    ],
)
def test_unusable_records_become_dead_letters_with_the_raw_bytes(raw, fragment):
    batch = RulesCore(PARTITIONS).fold_batch([incoming(raw, 42, key=b"k")], Table.answered_up_to(41).get)
    assert [s.kind for s in batch.sends] == ["deadletter"]
    letter = orjson.loads(batch.sends[0].value)
    assert fragment in letter["error"]
    assert base64.b64decode(letter["raw_b64"]) == raw
    assert (letter["topic"], letter["partition"], letter["offset"]) == ("plylog.moves", 3, 42)


def test_a_tombstone_is_a_dead_letter():
    batch = RulesCore(PARTITIONS).fold_batch([incoming(None, 5)], Table.answered_up_to(4).get)
    assert orjson.loads(batch.sends[0].value)["error"].startswith("record has no value")


def test_key_differing_from_match_id_is_rejected_without_touching_that_match():
    core, table = RulesCore(PARTITIONS), Table()
    table.apply(core.fold_batch([incoming(record("m1", "alice", CREATE, 0), 0)], table.get))
    batch = core.fold_batch([incoming(record("m1", "alice", {"type": "resign"}, 1), 1, key=b"m2")], table.get)
    result = orjson.loads(batch.sends[0].value)
    assert result["reason"]["code"] == "malformed" and "key" in result["reason"]["message"]
    assert result["view"] is None and list(batch.writes) == [position_key(3)]


def test_an_internal_error_dead_letters_the_record_and_the_batch_goes_on(monkeypatch):
    core, table = RulesCore(PARTITIONS), Table()
    real_step = rules_core.step

    def flaky(state, rec, source=None):
        if source and source["offset"] == 1:
            raise ZeroDivisionError("boom")
        return real_step(state, rec, source)

    monkeypatch.setattr(rules_core, "step", flaky)
    batch = core.fold_batch(
        [
            incoming(record("m1", "alice", CREATE, 0), 0),
            incoming(record("m1", "alice", {"type": "resign"}, 1), 1),
            incoming(record("m1", "bob", {"type": "place", "cells": [[1, 0]]}, 2), 2),
        ],
        table.get,
    )
    assert [s.kind for s in batch.sends] == ["results", "deadletter", "results"]
    assert "ZeroDivisionError: boom" in orjson.loads(batch.sends[1].value)["error"]


def test_a_finished_match_sends_its_outcome_to_partition_zero():
    core, table = RulesCore(PARTITIONS), Table()
    batch = core.fold_batch(
        [incoming(record("m1", "alice", CREATE, 0), 0), incoming(record("m1", "alice", {"type": "resign"}, 1), 1)],
        table.get,
    )
    outcome = [s for s in batch.sends if s.kind == "outcomes"]
    assert len(outcome) == 1 and outcome[0].partition == 0
    assert orjson.loads(outcome[0].value)["outcome"]["reason"] == "resign"


def test_records_at_or_below_the_stored_position_are_skipped_whatever_they_are():
    core, table = RulesCore(PARTITIONS), Table()
    records = [
        incoming(b"garbage", 0),
        incoming(
            record(
                "zz",
                "a",
                {"type": "join"},
                1,
            ),
            1,
            key=b"zz",
        ),
        incoming(record("m1", "alice", CREATE, 2), 2),
    ]
    table.apply(core.fold_batch(records, table.get))
    assert table[position_key(3)] == b"2"
    again = core.fold_batch([*records, incoming(record("m1", "bob", {"type": "resign"}, 3), 3)], table.get)
    assert again.counts["redelivered"] == 3 and [s.kind for s in again.sends] == ["results", "outcomes"]
    assert orjson.loads(again.sends[0].value)["source"]["offset"] == 3
    other_partition = core.fold_batch([incoming(b"garbage", 0, partition=4)], table.get)
    assert [s.kind for s in other_partition.sends] == ["deadletter"]


def test_records_beyond_a_gap_are_not_folded_and_the_partition_is_fetched_again():
    core, table = RulesCore(PARTITIONS), Table.answered_up_to(6)
    table[position_key(0)] = b"3"
    table.apply(core.fold_batch([incoming(record("m1", "alice", CREATE, 0), 7)], table.get))
    place = incoming(record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 1), 12)
    later = incoming(record("m1", "bob", {"type": "resign"}, 2), 13)
    other = incoming(record("m2", "alice", CREATE, 3), 4, key=b"m2", partition=0)
    batch = core.fold_batch([place, later, other], table.get)
    assert batch.rewind == {3: 8} and batch.counts["gaps"] == 1
    assert [orjson.loads(s.value)["source"] for s in batch.sends] == [{"partition": 0, "offset": 4}]
    assert position_key(3) not in batch.writes
    table.apply(batch)
    missed = [incoming(record("m1", "bob", {"type": "join"}, n), n) for n in range(8, 12)]
    fetched_again = core.fold_batch([*missed, place], table.get)
    assert fetched_again.rewind == {} and fetched_again.counts["gaps"] == 0
    assert fetched_again.offsets == {3: (8, 12)} and fetched_again.counts["accepted"] == 1


def test_a_gap_that_fetching_again_confirms_three_times_is_accepted():
    core, table = RulesCore(PARTITIONS), Table.answered_up_to(6)
    table.apply(core.fold_batch([incoming(record("m1", "alice", CREATE, 0), 7)], table.get))
    place = incoming(record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 1), 12)
    for _ in range(2):
        assert core.fold_batch([place], table.get).rewind == {3: 8}
    accepted = core.fold_batch([place], table.get)
    assert accepted.rewind == {} and accepted.counts["accepted"] == 1


def test_a_partition_with_no_stored_position_is_read_from_its_first_offset():
    """Seen on the cluster: a worker took over a partition whose paused owner had never stored
    its position, and Faust's fetching began hundreds of records in (it had dropped the records
    fetched before the rebalance and had no committed offset to seek back to). Those moves must
    be fetched again, not skipped for good."""
    core, table = RulesCore(PARTITIONS), Table()
    late = incoming(record("m1", "alice", CREATE, 0), 591)
    batch = core.fold_batch([late], table.get)
    assert batch.sends == [] and batch.rewind == {3: 0} and position_key(3) not in batch.writes
    first = core.fold_batch([incoming(record("m1", "alice", CREATE, 0), 0)], table.get)
    assert first.rewind == {} and first.counts["accepted"] == 1


def test_a_log_whose_first_records_were_deleted_is_read_from_its_first_record_left():
    """Retention deleted the start of the log: fetching from 0 gives the same first record three
    times, and the worker goes on from it."""
    core, table = RulesCore(PARTITIONS), Table()
    first_left = incoming(record("m1", "alice", CREATE, 0), 1000)
    for _ in range(2):
        assert core.fold_batch([first_left], table.get).rewind == {3: 0}
    accepted = core.fold_batch([first_left], table.get)
    assert accepted.rewind == {} and accepted.counts["accepted"] == 1


def test_batch_lines_name_the_first_batches_the_troubled_ones_and_one_per_interval():
    from collections import Counter

    from services.rules.core import BatchLines

    lines, plain = BatchLines(first=2, every_s=5.0), Counter(records=3)
    assert [lines.notable(n, plain, now=0.1 * n) for n in (1, 2)] == [True, True]  # a start is visible
    assert lines.since_last() == 0
    assert [lines.notable(n, plain, now=1.0 + n * 0.1) for n in (3, 4, 5)] == [False, False, False]
    assert lines.notable(6, Counter(records=3, deadletters=1), now=2.0)  # trouble is always named
    assert lines.since_last() == 3  # the line says how many were left out before it
    assert not lines.notable(7, Counter(records=3, redelivered=0), now=6.9)  # 4.9 s after the last line
    assert lines.notable(8, plain, now=7.0) and lines.since_last() == 1  # 5 s on: one line again
    assert lines.notable(9, Counter(records=3, redelivered=2), now=7.1)
