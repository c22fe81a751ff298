"""What `plylog export` puts in a match's log, and how its results are paired and compared
(services/cli/_match_logs.py, services/cli/export.py), without Kafka."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import typer

from games.fold import Replayer, encode
from games.playout import random_playout_records
from services.cli._match_logs import PartitionCollector, compare_replay, pair_results
from services.cli.export import created_between, parse_moment, results_path
from services.common.kafka_partition import partition_of
from services.common.kafka_read import Record
from tests.support import record

PARTITIONS = 4


def on_home(match_id: str, values: list, first_offset: int = 0) -> list[Record]:
    home = partition_of(match_id.encode(), PARTITIONS)
    return [Record(home, first_offset + n, match_id.encode(), v) for n, v in enumerate(values)]


def playout(match_id: str, seed: int = 1) -> list[bytes]:
    return [raw for raw, _ in random_playout_records("strands", {"layout": "small-4"}, seed, match_id)]


def test_a_match_log_is_its_readable_records_in_order():
    match_id = "m1"
    good = playout(match_id)
    noise = [None, b"\x00not json", orjson.dumps({**orjson.loads(good[1]), "match_id": "m2"})]
    records = on_home(match_id, [good[0], *noise, *good[1:]])
    collector = PartitionCollector(records[0].partition, PARTITIONS, wanted=lambda view: True, only=match_id)
    for rec in records:
        collector.feed(rec)
    log = collector.logs[match_id.encode()]
    assert [r.value for r in log.moves] == good
    assert [offset for offset, _ in log.skipped] == [1, 2, 3]
    assert "tombstone" in log.skipped[0][1] and "'m2'" in log.skipped[2][1]
    assert log.game == "strands" and log.created_at == orjson.loads(good[0])["at"]
    assert log.rules == "strands/1" and log.index_entry()["rules"] == "strands/1"  # upcast: it named none


def test_a_match_log_names_the_rules_its_create_stated():
    create = orjson.loads(playout("m1")[0])
    create["action"]["rules"] = "strands/2"
    collector = PartitionCollector(on_home("m1", [b""])[0].partition, PARTITIONS, wanted=lambda view: True)
    collector.feed(on_home("m1", [orjson.dumps(create)])[0])
    assert collector.logs[b"m1"].rules == "strands/2"


def test_a_time_range_takes_matches_created_in_it_with_their_earlier_records():
    inside = "inside-1"
    partition = partition_of(inside.encode(), PARTITIONS)
    early = next(f"early-{n}" for n in range(100) if partition_of(f"early-{n}".encode(), PARTITIONS) == partition)
    before_create = record(inside, "alice", {"type": "join"}, 0)  # rejected unknown_match, still its record
    inside_log = playout(inside)
    created_ms = parse_moment(orjson.loads(inside_log[0])["at"], "--since")
    collector = PartitionCollector(partition, PARTITIONS, created_between(created_ms, created_ms + 1))
    early_log = [raw.replace(b"2026-11-29T22", b"2026-11-29T20") for raw in playout(early, 2)]
    records = [
        Record(partition, n, orjson.loads(v)["match_id"].encode(), v)
        for n, v in enumerate([before_create, *early_log, *inside_log])
    ]
    for rec in records:
        collector.feed(rec)
    wanted = {key: [r.value for r in log.moves] for key, log in collector.logs.items()}
    assert wanted == {inside.encode(): [before_create, *inside_log]}  # early-N, created before, is passed over
    assert collector.passed_over == {early.encode()}


def test_records_keyed_to_another_partition_are_not_the_match_s():
    match_id = "m1"
    home = partition_of(match_id.encode(), PARTITIONS)
    other = (home + 1) % PARTITIONS
    collector = PartitionCollector(other, PARTITIONS, wanted=lambda view: True)
    for rec in [Record(other, n, match_id.encode(), v) for n, v in enumerate(playout(match_id))]:
        collector.feed(rec)
    assert collector.logs == {}


def test_a_record_with_a_line_break_makes_the_match_unwritable():
    good = playout("m1")
    pretty = orjson.dumps(orjson.loads(good[1]), option=orjson.OPT_INDENT_2)
    collector = PartitionCollector(0, PARTITIONS, wanted=lambda view: True, only="m1")
    for rec in on_home("m1", [good[0], pretty]):
        collector.feed(rec)
    assert collector.logs[b"m1"].unwritable and "line break" in collector.logs[b"m1"].unwritable[0][1]


def _topic_results(records: list[Record]) -> list[Record]:
    replayer = Replayer()
    return [
        Record(
            r.partition,
            n,
            r.key,
            encode(replayer.feed(r.value, {"partition": r.partition, "offset": r.offset}, key=r.key).result),
        )
        for n, r in enumerate(records)
    ]


def test_results_pair_with_their_records_first_copy_first():
    records = on_home("m1", playout("m1"))
    collector = PartitionCollector(records[0].partition, PARTITIONS, wanted=lambda view: True, only="m1")
    for rec in records:
        collector.feed(rec)
    log = collector.logs[b"m1"]
    results = _topic_results(records)
    redelivered = results[:3] + results[1:]  # a crash repeated two results
    foreign = Record(records[0].partition, 99, b"m9", results[0].value)
    paired = pair_results([log], [foreign, *redelivered])["m1"]
    assert paired.results == [r.value for r in results] and paired.missing == []
    behind = pair_results([log], results[:-2])["m1"]
    assert behind.missing == [records[-2].offset, records[-1].offset] and len(behind.results) == len(records) - 2


def test_compare_replay_is_byte_for_byte_apart_from_source():
    records = on_home("m1", playout("m1"))
    topic = [r.value for r in _topic_results(records)]
    lines = [r.value for r in records]
    same = compare_replay(lines, "m1.moves.jsonl", topic)
    assert same.results == len(records) and same.differences == []
    altered = [*topic[:-1], topic[-1].replace(b'"status":"over"', b'"status":"active"')]
    assert compare_replay(lines, "m1.moves.jsonl", altered).differences
    assert compare_replay(lines[:-1], "m1.moves.jsonl", topic).differences


def test_times_and_file_names():
    assert parse_moment("2026-11-29", "--since") == parse_moment("2026-11-29T00:00:00Z", "--since")
    assert parse_moment("2026-11-29T23:00:00+01:00", "--since") == parse_moment("2026-11-29T22:00:00Z", "--since")
    with pytest.raises(typer.BadParameter):
        parse_moment("yesterday", "--since")
    assert results_path(Path("d/m1.moves.jsonl")) == Path("d/m1.results.jsonl")
    assert results_path(Path("d/log.jsonl")) == Path("d/log.results.jsonl")


def test_a_key_longer_than_any_match_id_is_partitioned_as_kafka_does_but_never_cached():
    """Anyone may write keys as large as a record; 16,384 of them held by the cache would be gigabytes."""
    import uuid

    from kafka.partitioner.default import murmur2

    from services.common import kafka_partition

    asked = kafka_partition._cached_partition.cache_info().misses
    long = b"k" * 1_000_000
    assert partition_of(long, 12) == (murmur2(long) & 0x7FFFFFFF) % 12
    assert kafka_partition._cached_partition.cache_info().misses == asked
    partition_of(f"m-{uuid.uuid4().hex}".encode(), 12)
    assert kafka_partition._cached_partition.cache_info().misses == asked + 1
