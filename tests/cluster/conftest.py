"""A real local cluster for the fault tests: `plylog up --cluster --infra-only` (three Kafka nodes,
a Redis Cluster of 3 primaries + 3 replicas) in a temporary PLYLOG_HOME on free ports, started once
for this package's tests and removed (`plylog down --purge`) after them. Kafka authenticates and
authorizes as in production: the tests' own clients log in as the operator (a super user, through
this process's environment), each service they start as its own user, under its own ACLs. Its
nodes are killed and restarted by the tests the way an operator's would be: SIGKILL a process,
`plylog up --cluster --infra-only` again to start what is missing.

Under CI=true a cluster that cannot start fails the tests; elsewhere they are skipped.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.cli._proc import ProcRecord, port_free
from services.common import kafka_acls, kafka_admin, redis_client
from services.common.kafka_auth import KafkaAuth
from services.common.settings import Topics
from tests.conftest import CI

REPO = Path(__file__).resolve().parents[2]
PARTITIONS = 6


def _free_bases() -> dict[str, int]:
    """Port bases whose whole ranges (3 brokers, 3 controllers, 6 Redis nodes and their buses) are free."""
    rng = random.Random()
    for _ in range(200):
        kafka, redis_port = rng.randrange(21000, 29000, 20), rng.randrange(31000, 39000, 10)
        ports = (
            [kafka + i for i in range(6)]
            + [redis_port + i for i in range(6)]
            + [redis_port + 10000 + i for i in range(6)]
            + [kafka + 10, kafka + 110, kafka + 120]
        )
        if all(port_free(p) for p in ports):
            return {
                "PLYLOG_KAFKA_PORT": kafka,
                "PLYLOG_KAFKA_CONTROLLER_PORT": kafka + 1,
                "PLYLOG_REDIS_PORT": redis_port,
                "PLYLOG_GATEWAY_PORT": kafka + 10,
            }
    raise RuntimeError("no free port range for a local cluster")


@dataclass
class LocalCluster:
    home: Path
    env: dict[str, str]
    bootstrap: str
    redis_url: str
    users: dict[str, str] | None = None  # Kafka user -> password (PLYLOG_HOME/kafka-users.json)

    def auth(self, service: str) -> KafkaAuth:
        """The Kafka credentials of a service ("rules", "gateway", ...) or of "operator"."""
        user = kafka_acls.OPERATOR if service == "operator" else kafka_acls.SERVICE_USERS[service]
        return KafkaAuth(user, self.users[user])

    def plylog(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "services.cli.main", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def record(self, name: str) -> ProcRecord:
        return ProcRecord.from_json(json.loads((self.home / "run" / f"{name}.json").read_text()))

    def kill(self, name: str) -> None:
        """SIGKILL one node (kafka-N, redis-N): a crash, no shutdown."""
        rec = self.record(name)
        assert rec.alive(), f"{name} is not running"
        os.kill(rec.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while rec.alive() and time.monotonic() < deadline:
            time.sleep(0.05)

    def start_missing(self) -> subprocess.CompletedProcess:
        """`plylog up --cluster --infra-only`: starts the nodes that are not running, nothing else;
        then waits until the Kafka cluster is settled again (see `wait_settled`)."""
        done = self.plylog("up", "--cluster", "--infra-only", "--partitions", str(PARTITIONS))
        assert done.returncode == 0, done.stdout + done.stderr
        self.wait_settled()
        return done

    def wait_settled(self, timeout: float = 180) -> None:
        """Until every partition of every topic (the group coordinator's included) has all its
        replicas in sync and its preferred replica leading. A broker that came back is "ready" as
        soon as it answers, but catches up and takes its leaderships back (preferred-leader
        election) only later: a test that starts meanwhile sees the group coordinator or partition
        leaders move under its load (in the CI run: NotLeaderForPartition for 60 s, then the
        worker stopped). Each test starts on a settled cluster; the faults are the ones it makes."""
        deadline, elected = time.monotonic() + timeout, False
        with kafka_admin.admin(self.bootstrap, timeout=30) as client:
            while True:
                unsettled, not_preferred = _unsettled_partitions(client.describe_topics())
                if not unsettled and not not_preferred:
                    return
                if not unsettled and not elected:
                    client.elect_leaders(0, None, raise_errors=False)  # 0: preferred replica
                    elected = True
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"the Kafka cluster did not settle in {timeout:g} s: out of sync "
                        f"{unsettled[:5]}, not led by their preferred replica {not_preferred[:5]}"
                    )
                time.sleep(0.5)

    def topics(self, label: str) -> Topics:
        """Contract topics of their own (3 replicas, min.insync.replicas 2), on a settled cluster."""
        self.wait_settled()
        topics = Topics(f"c{label}{uuid.uuid4().hex[:6]}.")
        kafka_admin.ensure_contract_topics(
            self.bootstrap, topics.prefix, PARTITIONS, replication=3, min_insync=2, timeout=60
        )
        kafka_acls.ensure(self.bootstrap, topics)  # what `plylog up --cluster` does for its prefix
        return topics

    def service_env(self, topics: Topics, redis_prefix: str, service: str = "reader") -> dict[str, str]:
        """A service's environment: these topics, this Redis prefix and the service's Kafka user."""
        return {
            **self.auth(service).env(),
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "REDIS_URL": self.redis_url,
            "PLYLOG_TOPIC_PREFIX": topics.prefix,
            "PLYLOG_REDIS_PREFIX": redis_prefix,
            "PLYLOG_REPLICATION_FACTOR": "3",
            "PLYLOG_MIN_INSYNC_REPLICAS": "2",
            "PLYLOG_PARTITIONS": str(PARTITIONS),
        }

    def redis(self):
        return redis_client.connect(self.redis_url)


def _unsettled_partitions(topics: list[dict]) -> tuple[list[str], list[str]]:
    """(partitions without a leader or with replicas out of sync, partitions not led by their
    preferred replica) of kafka-python's describe_topics()."""
    unsettled, not_preferred = [], []
    for topic in topics:
        for part in topic.get("partitions") or []:
            name = f"{topic.get('topic') or topic.get('name')}-{part.get('partition_index', part.get('partition'))}"
            replicas = part.get("replica_nodes") or part.get("replicas") or []
            isr = part.get("isr_nodes") or part.get("isr") or []
            leader = part.get("leader_id", part.get("leader", -1))
            if leader is None or leader < 0 or set(isr) != set(replicas):
                unsettled.append(name)
            elif replicas and leader != replicas[0]:
                not_preferred.append(name)
    return unsettled, not_preferred


@pytest.fixture(scope="package")  # stopped after tests/cluster: its idle JVMs would slow the rest of the run
def local_cluster():
    home = Path(tempfile.mkdtemp(prefix="plylog-cluster-test-"))
    env = {
        **os.environ,
        "PLYLOG_HOME": str(home),
        "PYTHONPATH": str(REPO),
        **{k: str(v) for k, v in _free_bases().items()},
    }
    for name in ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL", "PLYLOG_KAFKA_USERNAME", "PLYLOG_KAFKA_PASSWORD"):
        env.pop(name, None)
    cluster = LocalCluster(home, env, "", "")
    saved: dict[str, str | None] = {}  # this process's Kafka credentials before the operator's
    started = time.monotonic()
    done = cluster.plylog("up", "--cluster", "--infra-only", "--partitions", str(PARTITIONS))
    try:
        if done.returncode != 0:
            message = f"plylog up --cluster failed:\n{done.stdout}\n{done.stderr}"
            if CI:
                pytest.fail(message, pytrace=False)
            pytest.skip(message)
        stack = json.loads((home / "stack.json").read_text())
        cluster.bootstrap, cluster.redis_url = stack["kafka_bootstrap"], stack["redis_url"]
        cluster.users = json.loads((home / "kafka-users.json").read_text())
        operator = cluster.auth("operator").env()
        env.update(operator)  # the CLI runs as the operator, and so do this process's own clients
        saved.update({name: os.environ.get(name) for name in operator})
        os.environ.update(operator)
        print(
            f"\nlocal cluster up in {time.monotonic() - started:.1f} s: Kafka {cluster.bootstrap}, "
            f"Redis {cluster.redis_url}"
        )
        yield cluster
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        records = [ProcRecord.from_json(json.loads(f.read_text())) for f in (home / "run").glob("*.json")]
        down = cluster.plylog("down", "--purge")
        left = [f"{rec.name} (pid {rec.pid})" for rec in records if rec.alive()]
        shutil.rmtree(home, ignore_errors=True)
        assert down.returncode == 0 and not left, f"plylog down left {left}: {down.stdout} {down.stderr}"


def pytest_terminal_summary(terminalreporter) -> None:
    from .test_cluster_faults import FIGURES

    for what, seconds in FIGURES.items():
        terminalreporter.write_line(f"cluster faults: {what}: {seconds:.1f}")
