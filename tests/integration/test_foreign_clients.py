"""A match played to its end by clients nobody here wrote, through the documented contract only:
its move records produced with Debian's kcat (librdkafka, `-X partitioner=murmur2_random` as
docs/contract.md says) and its results read with the Java console consumer of the Apache Kafka tools. The
results are the offline fold's, byte for byte; the same records produced with kcat's default
partitioner are refused, naming both partitions. The commands are those of docs/contract.md."""

from __future__ import annotations

import shutil
import subprocess

import orjson
import pytest

from games.fold import Replayer, encode
from games.playout import random_playout_records
from services.cli import _kafka
from services.common.kafka_partition import partition_of
from tests.conftest import CI

from .harness import rules_worker, wait_until_answered

pytestmark = pytest.mark.integration
PARTITIONS = 12


def _tools() -> tuple[str, str]:
    kcat, java, tools = shutil.which("kcat"), shutil.which("java"), _kafka.tools_dir()
    missing = [
        what
        for what, ok in (
            ("kcat", kcat),
            ("java", java),
            (f"the Kafka tools in {tools}", any(tools.glob("kafka-tools-*.jar"))),
        )
        if not ok
    ]
    if missing:
        (pytest.fail if CI else pytest.skip)(f"no {', '.join(missing)}: `make setup` installs them")
    return kcat, f"{java}"


def kcat_produce(kcat: str, bootstrap: str, topic: str, records: list[tuple[str, bytes]], murmur2: bool) -> None:
    lines = b"".join(key.encode() + b"|" + value + b"\n" for key, value in records)
    partitioner = ["-X", "partitioner=murmur2_random"] if murmur2 else []
    subprocess.run(
        [kcat, "-P", "-b", bootstrap, "-t", topic, "-K", "|", *partitioner], input=lines, check=True, timeout=60
    )


def console_consumer(java: str, bootstrap: str, topic: str, count: int) -> list[tuple[str, int, bytes]]:
    """(key, partition, value) of `count` records, read by Kafka's own Java console consumer."""
    done = subprocess.run(
        [
            java,
            "-cp",
            f"{_kafka.tools_dir()}/*",
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            str(count),
            "--timeout-ms",
            "30000",
            "--property",
            "print.key=true",
            "--property",
            "print.partition=true",
            "--property",
            "key.separator=|",
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    rows = []
    for line in done.stdout.splitlines():
        partition, key, value = line.split(b"|", 2)
        rows.append((key.decode(), int(partition.split(b":")[1]), value))
    return rows


def test_a_match_played_with_kcat_and_read_with_the_java_console_consumer(kafka_bootstrap, contract_topics, tmp_path):
    kcat, java = _tools()
    topics = contract_topics(partitions=PARTITIONS)
    match_id = "kcat-strands"
    played = [raw for raw, _ in random_playout_records("strands", {"layout": "small-4"}, seed=4, match_id=match_id)]
    worker = rules_worker(kafka_bootstrap, topics, tmp_path).start()
    try:
        kcat_produce(kcat, kafka_bootstrap, topics.moves, [(match_id, raw) for raw in played], murmur2=True)
        wait_until_answered(kafka_bootstrap, topics, len(played), workers=[worker])
        stray = orjson.dumps({**orjson.loads(played[-1]), "event_id": "kcat-default-partitioner"})
        kcat_produce(kcat, kafka_bootstrap, topics.moves, [(match_id, stray)], murmur2=False)
        wait_until_answered(kafka_bootstrap, topics, len(played) + 1, workers=[worker])
    finally:
        worker.stop()
    rows = console_consumer(java, kafka_bootstrap, topics.results, len(played) + 1)
    home = partition_of(match_id.encode(), PARTITIONS)
    ours = [orjson.loads(value) for key, partition, value in rows if partition == home]
    offline = Replayer()
    expected = [encode({**offline.feed(raw).result, "source": None}) for raw in played]
    assert [encode({**r, "source": None}) for r in sorted(ours, key=lambda r: r["source"]["offset"])] == expected
    assert ours[-1]["view"]["status"] == "over" and all(k == match_id for k, _, _ in rows)
    refused = [orjson.loads(value) for _, partition, value in rows if partition != home]
    assert len(refused) == 1 and refused[0]["reason"]["code"] == "malformed"
    assert f"lives on partition {home}" in refused[0]["reason"]["message"]
