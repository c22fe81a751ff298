"""Smoke tests of the foundation: plylog's topics, its producers' partitioning, `plylog up/down`.

They run against whatever tests/conftest.py resolves (env, the local stack from
`make test`, or testcontainers); under CI=true a missing service fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services.common import kafka_admin
from services.common.kafka_admin import TopicSpec
from services.common.settings import Settings, Topics

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


async def test_plylogs_own_producers_put_a_match_on_its_home_partition(kafka_bootstrap, topic_prefix):
    """The rules worker refuses a move off its home partition (`partition_of`, Java's murmur2): the
    producers plylog itself uses, kafka-python (tests, bench, CLI) and aiokafka (the gateway, the
    rules worker), must put every key there, in order."""
    from aiokafka import AIOKafkaProducer
    from kafka import KafkaProducer

    from services.common.kafka_partition import partition_of
    from services.common.kafka_read import read_topic

    topic = f"{topic_prefix}home"
    kafka_admin.create_topics(kafka_bootstrap, [TopicSpec(topic, 12)])
    keys = [f"m-{i}".encode() for i in range(30)]
    try:
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", linger_ms=5)
        for n, key in enumerate(keys):
            producer.send(topic, key=key, value=b"kafka-python %d" % n)
        producer.flush(timeout=30)
        producer.close()
        aio = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        await aio.start()
        try:
            for n, key in enumerate(keys):
                await aio.send_and_wait(topic, key=key, value=b"aiokafka %d" % n)
        finally:
            await aio.stop()
        records = read_topic(kafka_bootstrap, topic)
        assert len(records) == 2 * len(keys)
        for record in records:
            assert record.partition == partition_of(record.key, 12), record
        for key in keys:
            assert [r.value.split()[0] for r in records if r.key == key] == [b"kafka-python", b"aiokafka"]
    finally:
        kafka_admin.delete_topics(kafka_bootstrap, [topic])


def test_contract_topics_helper(kafka_bootstrap, contract_topics):
    topics = contract_topics(partitions=5)
    counts = kafka_admin.partition_counts(kafka_bootstrap, topics.all())
    assert counts == {topics.moves: 5, topics.results: 5, topics.outcomes: 1, topics.deadletter: 5}
    assert kafka_admin.topic_configs(kafka_bootstrap, topics.moves)["retention.ms"] == "-1"
    # Creating them again is a no-op.
    again = kafka_admin.ensure_contract_topics(kafka_bootstrap, topics.prefix, 5)
    assert set(again.values()) == {"exists"}


def test_stack_contract_topics_exist(kafka_bootstrap, plylog_stack):
    """The topics `plylog up` (or compose's topic-init) creates: prefix and partitions as
    configured, plylog.outcomes with exactly one partition, moves kept forever."""
    if plylog_stack is not None:
        prefix = plylog_stack["topics"]["prefix"]
        partitions = plylog_stack["topics"]["partitions"]
    else:
        s = Settings.from_env()
        prefix, partitions = s.topic_prefix, s.partitions
    t = Topics(prefix)
    counts = kafka_admin.partition_counts(kafka_bootstrap, t.all())
    assert counts == {t.moves: partitions, t.results: partitions, t.outcomes: 1, t.deadletter: partitions}
    assert kafka_admin.topic_configs(kafka_bootstrap, t.moves).get("retention.ms") == "-1"


def _plylog(args: list[str], env: dict[str, str], timeout: float = 240):
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def _pids(home: Path) -> dict[str, int]:
    doc = json.loads((home / "stack.json").read_text())
    return {name: c["pid"] for name, c in doc["components"].items()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return (
        Path(f"/proc/{pid}/stat").is_file()
        and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    )


def test_up_twice_starts_nothing_new(kafka_bootstrap, redis_url, plylog_stack, tmp_path):
    """`plylog up --infra-only` is idempotent: run twice, the same PIDs serve.

    On the local stack of `make test` both runs must find everything running. Elsewhere
    (services from env / containers) a private stack is started on free ports in a temp
    home, checked, and torn down with `plylog down` (which must leave no process)."""
    env = dict(os.environ)
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    env.pop("REDIS_URL", None)
    own = plylog_stack is None
    if own:
        if not (shutil.which("java") and shutil.which("mvn")):
            msg = "a private local stack needs java and mvn"
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                pytest.fail(msg)
            pytest.skip(msg)
        from bench.procs import free_port

        home = tmp_path / "plylog-home"
        ports = {
            "PLYLOG_KAFKA_PORT": free_port(),
            "PLYLOG_KAFKA_CONTROLLER_PORT": free_port(),
            "PLYLOG_REDIS_PORT": free_port(),
            "PLYLOG_GATEWAY_PORT": free_port(),
        }
        env.update({k: str(v) for k, v in ports.items()})
        env.update(PLYLOG_HOME=str(home), PLYLOG_PARTITIONS="2")
    else:
        home = Path(plylog_stack["home"])
        cfg = plylog_stack["settings"]
        env.update(
            PLYLOG_HOME=str(home),
            PLYLOG_KAFKA_PORT=str(cfg["kafka_port"]),
            PLYLOG_KAFKA_CONTROLLER_PORT=str(cfg["controller_port"]),
            PLYLOG_REDIS_PORT=str(cfg["redis_port"]),
            PLYLOG_GATEWAY_PORT=str(cfg["gateway_port"]),
            PLYLOG_TOPIC_PREFIX=cfg["topic_prefix"],
            PLYLOG_PARTITIONS=str(cfg["partitions"]),
        )
    before = _pids(home) if not own else None
    try:
        first = _plylog(["up", "--infra-only"], env)
        assert first.returncode == 0, first.stdout + first.stderr
        pids1 = _pids(home)
        assert {"kafka", "redis"} <= set(pids1)
        if before is not None:
            assert {k: pids1[k] for k in ("kafka", "redis")} == {k: before[k] for k in ("kafka", "redis")}
            assert "nothing new started" in first.stdout, first.stdout

        second = _plylog(["up", "--infra-only"], env)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "nothing new started" in second.stdout, second.stdout
        assert "already running" in second.stdout
        pids2 = _pids(home)
        assert {k: pids2[k] for k in ("kafka", "redis")} == {k: pids1[k] for k in ("kafka", "redis")}
        assert all(_alive(p) for p in pids2.values())

        status = _plylog(["status", "--json", "--check"], env)
        assert status.returncode == 0, status.stdout + status.stderr
        rows = {r["component"]: r for r in json.loads(status.stdout)["components"]}
        assert rows["kafka"]["pid"] == pids1["kafka"] and rows["kafka"]["state"] == "running"
        assert rows["redis"]["pid"] == pids1["redis"] and rows["redis"]["state"] == "running"
    finally:
        if own and (home / "run").is_dir():
            pids = _pids(home) if (home / "stack.json").is_file() else {}
            down = _plylog(["down"], env)
            assert down.returncode == 0, down.stdout + down.stderr
            time.sleep(0.5)
            assert not [p for p in pids.values() if _alive(p)], "plylog down left processes"


def _temp_env(tmp_path: Path) -> dict[str, str]:
    from bench.procs import free_port

    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL")}
    env.update(
        PLYLOG_HOME=str(tmp_path / "home"),
        PLYLOG_KAFKA_PORT=str(free_port()),
        PLYLOG_KAFKA_CONTROLLER_PORT=str(free_port()),
        PLYLOG_REDIS_PORT=str(free_port()),
        PLYLOG_GATEWAY_PORT=str(free_port()),
    )
    return env


def test_down_never_kills_a_process_that_is_not_ours(tmp_path):
    """A pid file whose pid now belongs to another process (pid reuse) is not acted on;
    the very process we recorded is stopped."""
    from services.cli._proc import record_for

    env = _temp_env(tmp_path)
    run = Path(env["PLYLOG_HOME"]) / "run"
    run.mkdir(parents=True)
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        rec = record_for("rules-1", victim.pid, "time.sleep", tmp_path / "x.log")
        assert rec is not None
        impostor = dict(rec.to_json(), starttime=rec.starttime + 1)  # "same pid, other process"
        (run / "rules-1.json").write_text(json.dumps(impostor))
        down = _plylog(["down"], env, timeout=60)
        assert down.returncode == 0, down.stdout + down.stderr
        assert victim.poll() is None, "plylog down killed a process it had not started"
        assert "not running" in down.stdout

        (run / "rules-1.json").write_text(json.dumps(rec.to_json()))
        down = _plylog(["down"], env, timeout=60)
        assert down.returncode == 0, down.stdout + down.stderr
        assert victim.wait(timeout=20) is not None
        assert "stopped" in down.stdout
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()


def test_up_reports_a_port_taken_by_someone_else(tmp_path):
    """A port in use by a foreign process: one-line cause + what to do, exit 1, no
    traceback, nothing left running."""
    import socket

    env = _temp_env(tmp_path)
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", int(env["PLYLOG_REDIS_PORT"])))
        blocker.listen()
        up = _plylog(["up", "--infra-only"], env, timeout=120)
    assert up.returncode == 1, up.stdout + up.stderr
    assert "Traceback" not in up.stderr
    assert f"port {env['PLYLOG_REDIS_PORT']} is in use by pid {os.getpid()}" in up.stderr
    assert "PLYLOG_REDIS_PORT" in up.stderr
    assert not (Path(env["PLYLOG_HOME"]) / "stack.json").exists()
