"""`plylog export` on the real broker: a seeded playout of every game and 1,200 short matches
created over a time range go through the rules worker; exported logs are the exact bytes of
the topic, and `plylog replay --file` of an export gives byte for byte the results on the
topic, apart from `source` ({file, line} offline, {partition, offset} on the topic)."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from games.fold import encode
from games.playout import DEFAULT_START_MS, move_record, random_playout_records
from games.registry import GAME_MODULES
from games.timeutil import from_ms
from services.cli import _topic_reader
from services.cli.export import results_path
from services.cli.main import app
from services.common.kafka_partition import partition_of

from .harness import produce, rules_worker, wait_until_answered

pytestmark = pytest.mark.integration
GAMES = list(GAME_MODULES)
SHORT_OPTIONS = {
    "mastermind": {"pegs": 3, "colors": 4},
    "strands": {"layout": "small-4"},
    "mana": {},
    "mind_ninja": {"side": 3},
}
SHORT_MATCHES = 1200
SPACING_MS = 60_000  # a short match is created every minute
PARTITIONS = 4


def full_playout(game: str) -> list[bytes]:
    return [raw for raw, _ in random_playout_records(game, SHORT_OPTIONS[game], 7, f"full-{game.replace('_', '-')}")]


def short_match(number: int, rng: random.Random) -> list[bytes]:
    """Created SPACING_MS after the previous one: a few random moves, then a resignation, a retry
    and an out-of-turn move (rejected) now and then."""
    game = GAMES[number % len(GAMES)]
    match_id = f"short-{number:04d}"
    start = DEFAULT_START_MS + number * SPACING_MS
    played = []
    for raw, taken in random_playout_records(game, SHORT_OPTIONS[game], number, match_id, start_ms=start):
        played.append((raw, taken))
        if len(played) == 4 or taken.state.status == "over":
            break
    records = [raw for raw, _ in played]
    state = played[-1][1].state
    if state.status == "active":
        records.append(move_record(match_id, "alice", {"type": "resign"}, f"{match_id}-resign", start + 10_000))
    if rng.random() < 0.1:
        records.insert(2, records[1])  # a client retry: answered as a duplicate
    if rng.random() < 0.1:
        records.insert(1, move_record(match_id, "mallory", {"type": "resign"}, f"{match_id}-x", start + 500))
    return records


def interleave(logs: list[list[bytes]], rng: random.Random) -> list[bytes]:
    """All records, each log in its order, the logs mixed as concurrent matches are."""
    queues = [list(log) for log in logs]
    out = []
    while queues:
        queue = rng.choice(queues)
        out.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    return out


@pytest.fixture(scope="module")
def exported_world(kafka_bootstrap, tmp_path_factory):
    """The topics, with every record answered by the rules worker; yields what was sent."""
    from services.common import kafka_admin
    from services.common.settings import Topics

    prefix = f"export{random.randrange(16**6):06x}."
    kafka_admin.ensure_contract_topics(kafka_bootstrap, prefix, PARTITIONS)
    topics = Topics(prefix)
    rng = random.Random(2026)
    logs = {f"full-{g.replace('_', '-')}": full_playout(g) for g in GAMES}
    logs |= {f"short-{n:04d}": short_match(n, rng) for n in range(SHORT_MATCHES)}
    noise = [
        (b"short-0003", None),  # a tombstone keyed by a match
        (b"short-0003", b"\x00not json"),  # unreadable: dead-lettered
        (b"short-0003", orjson.dumps({**orjson.loads(logs["short-0004"][1]), "event_id": "mis-keyed"})),
    ]
    sent = [(orjson.loads(raw)["match_id"].encode(), raw) for raw in interleave(list(logs.values()), rng)]
    worker = rules_worker(kafka_bootstrap, topics, tmp_path_factory.mktemp("rules")).start()
    try:
        produce(kafka_bootstrap, topics.moves, sent[: len(sent) // 2] + noise + sent[len(sent) // 2 :])
        wait_until_answered(kafka_bootstrap, topics, len(sent) + len(noise), timeout=300, workers=[worker])
    finally:
        worker.stop()
    yield topics, logs
    kafka_admin.delete_topics(kafka_bootstrap, topics.all())


def run(kafka_bootstrap: str, topics, *args: str) -> str:
    result = CliRunner().invoke(
        app, list(args), env={"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "PLYLOG_TOPIC_PREFIX": topics.prefix}
    )
    assert result.exit_code == 0, result.output
    return result.output


def assert_replay_gives_the_topic_results(kafka_bootstrap, topics, moves_file: Path, tmp_path: Path) -> int:
    """`plylog replay --file` of the log vs the exported results: equal bytes once `source` is the topic's."""
    replayed_file = tmp_path / f"{moves_file.stem}.replayed.jsonl"
    run(kafka_bootstrap, topics, "replay", "--file", str(moves_file), "--out", str(replayed_file))
    replayed = replayed_file.read_bytes().splitlines()
    online = results_path(moves_file).read_bytes().splitlines()
    assert len(replayed) == len(online) == len(moves_file.read_bytes().splitlines())
    for line, (offline, topic) in enumerate(zip(replayed, online, strict=False), start=1):
        offline_result = orjson.loads(offline)
        assert offline_result["source"] == {"file": str(moves_file), "line": line}
        assert encode({**offline_result, "source": orjson.loads(topic)["source"]}) == topic, (moves_file, line)
    return len(replayed)


def test_a_match_export_is_its_records_and_replays_to_the_topic_results(
    kafka_bootstrap, exported_world, tmp_path, monkeypatch
):
    topics, logs = exported_world
    reads = []
    original = _topic_reader.TopicReader.records
    monkeypatch.setattr(
        _topic_reader.TopicReader,
        "records",
        lambda self, topic, partition: reads.append((topic, partition)) or original(self, topic, partition),
    )
    for match_id in [m for m in logs if m.startswith("full-")] + ["short-0003", "short-0004"]:
        moves_file = tmp_path / f"{match_id}.moves.jsonl"
        output = run(
            kafka_bootstrap, topics, "export", "--match", match_id, "--out", str(moves_file), "--results", "--check"
        )
        assert moves_file.read_bytes().splitlines() == logs[match_id], "the exact bytes of the topic, in order"
        assert assert_replay_gives_the_topic_results(kafka_bootstrap, topics, moves_file, tmp_path) == len(
            logs[match_id]
        )
        assert f"check: {len(logs[match_id])} replayed results" in output
        home = partition_of(match_id.encode(), PARTITIONS)
        assert set(reads) == {(topics.moves, home), (topics.results, home)}, "only the match's home partition"
        reads.clear()
    assert "3 records keyed by these matches left out" in run(
        kafka_bootstrap, topics, "export", "--match", "short-0003", "--out", str(tmp_path / "s3.jsonl")
    )


@pytest.mark.parametrize("combined", [False, True], ids=["a file per match", "one combined file"])
def test_a_time_range_exports_every_match_created_in_it(kafka_bootstrap, exported_world, tmp_path, combined):
    topics, logs = exported_world
    first, last = 100, 1100  # the 1,000 short matches created in [since, until); 200 outside it
    since = from_ms(DEFAULT_START_MS + first * SPACING_MS)
    until = from_ms(DEFAULT_START_MS + last * SPACING_MS)
    out = tmp_path / "range"
    output = run(
        kafka_bootstrap,
        topics,
        "export",
        "--since",
        since,
        "--until",
        until,
        "--out",
        str(out),
        "--results",
        "--check",
        *(["--combined"] if combined else []),
    )
    index = [orjson.loads(line) for line in (out / "index.jsonl").read_bytes().splitlines()]
    expected = {f"short-{n:04d}" for n in range(first, last)}
    assert {entry["match_id"] for entry in index} == expected
    assert f"exported {len(expected)} matches" in output and "(4 of 4)" in output
    if combined:
        by_match = defaultdict(list)
        for raw in (out / "matches.moves.jsonl").read_bytes().splitlines():
            by_match[orjson.loads(raw)["match_id"]].append(raw)
        assert dict(by_match) == {m: logs[m] for m in expected}
        checked = assert_replay_gives_the_topic_results(kafka_bootstrap, topics, out / "matches.moves.jsonl", tmp_path)
    else:
        assert sorted(p.name for p in out.glob("*.moves.jsonl")) == sorted(f"{m}.moves.jsonl" for m in expected)
        checked = 0
        for match_id in sorted(expected):
            assert (out / f"{match_id}.moves.jsonl").read_bytes().splitlines() == logs[match_id]
            checked += assert_replay_gives_the_topic_results(
                kafka_bootstrap, topics, out / f"{match_id}.moves.jsonl", tmp_path
            )
    assert checked == sum(len(logs[m]) for m in expected)
    assert f"check: {checked} replayed results" in output
