"""Shared pytest fixtures: real Kafka and Redis for integration tests, isolated per test.

Where the services come from, in this order (session scope, resolved on first use):
  1. KAFKA_BOOTSTRAP_SERVERS / REDIS_URL from the environment, if set;
  2. the local stack started by `plylog up` / `make test` (read from $PLYLOG_HOME/stack.json,
     default .plylog/stack.json), if it answers;
  3. testcontainers, if a Docker engine answers (apache/kafka in KRaft mode, redis:7);
  4. otherwise: under CI=true the test FAILS (a missing service is a failure, never a
     skip); elsewhere it is skipped with a message saying how to start the services.

Isolation on the shared broker / Redis:
  topic_prefix     a unique topic prefix per test, e.g. "t1a2b3c4d."
  contract_topics  factory: contract_topics(partitions=3, prefix=None) creates the four
                   contract topics for a prefix (default: this test's topic_prefix) and
                   returns services.common.settings.Topics; deleted after the test
  redis_db_url     a Redis URL on a private, flushed database (1..15) for this test
  redis_client     a redis.Redis on that database
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from services.common import settings as plysettings

CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pytest_configure(config) -> None:
    """`timeout` and CI runners stop a run with SIGTERM: make it an interrupt, so fixtures tear
    down and the service processes the tests started are stopped."""
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


KAFKA_IMAGE = "apache/kafka:4.0.2"  # keep in step with deploy/kafka/pom.xml
REDIS_IMAGE = "redis:7"


def _unavailable(what: str) -> None:
    hint = (
        "start them with `make test` (or `.venv/bin/plylog up --infra-only`), or set "
        "KAFKA_BOOTSTRAP_SERVERS / REDIS_URL"
    )
    if CI:
        pytest.fail(f"{what}; CI=true, so a missing service is a failure. {hint}", pytrace=False)
    pytest.skip(f"{what}; {hint}")


@dataclass
class _Source:
    address: str
    origin: str  # "env", "local stack (<home>)", "testcontainers"
    home: str | None = None


class _Resolver:
    """Finds Kafka and Redis once per session and owns any containers it starts."""

    def __init__(self) -> None:
        self.settings = plysettings.Settings.from_env()
        self.stack = self._read_stack()
        self.containers: list = []
        self.found: dict[str, _Source] = {}
        self.errors: dict[str, str] = {}

    def _read_stack(self) -> dict | None:
        import json

        with contextlib.suppress(OSError, ValueError):
            return json.loads(self.settings.stack_file.read_text())
        return None

    # -- probes
    @staticmethod
    def kafka_ok(bootstrap: str) -> bool:
        from services.common import kafka_admin

        return kafka_admin.metadata_answers(bootstrap, timeout=5) is not None

    @staticmethod
    def redis_ok(url: str) -> bool:
        from services.common import redis_client

        with contextlib.suppress(Exception):
            client = redis_client.connect(url, socket_connect_timeout=3, socket_timeout=3)
            try:
                return bool(client.ping())
            finally:
                client.close()
        return False

    def _docker(self) -> bool:
        try:
            import docker

            client = docker.from_env(timeout=5)
            client.ping()
            client.close()
            return True
        except Exception:  # noqa: BLE001 - no engine, no socket, no permission
            return False

    # -- resolution
    def kafka(self) -> _Source:
        return self._resolve(
            "kafka",
            "Kafka",
            "KAFKA_BOOTSTRAP_SERVERS",
            "kafka_bootstrap",
            self.kafka_ok,
            "does not answer",
            self._start_kafka_container,
        )

    def redis(self) -> _Source:
        return self._resolve(
            "redis",
            "Redis",
            "REDIS_URL",
            "redis_url",
            self.redis_ok,
            "does not answer PING",
            self._start_redis_container,
        )

    def _resolve(
        self,
        name: str,
        title: str,
        env_var: str,
        stack_key: str,
        answers: Callable[[str], bool],
        silence: str,
        start_container: Callable[[], str],
    ) -> _Source:
        """The environment's address, else the local stack's, else a container's; found once."""
        if name in self.found:
            return self.found[name]
        if name in self.errors:
            _unavailable(self.errors[name])
        env = os.environ.get(env_var, "").strip()
        if env:
            if not answers(env):
                self.errors[name] = f"{env_var}={env} {silence}"
                _unavailable(self.errors[name])
            src = _Source(env, "env")
        elif self.stack and self.stack.get(stack_key) and answers(self.stack[stack_key]):
            src = _Source(self.stack[stack_key], f"local stack ({self.stack['home']})", self.stack["home"])
        elif self._docker():
            src = _Source(start_container(), "testcontainers")
        else:
            self.errors[name] = (
                f"no {title}: {env_var} is unset, no local stack answers "
                f"({self.settings.stack_file}), and no Docker engine answers"
            )
            _unavailable(self.errors[name])
        self.found[name] = src
        return src

    # -- containers (only where a Docker engine answers)
    def _start_kafka_container(self) -> str:
        from testcontainers.core.container import DockerContainer

        from bench.procs import free_port
        from services.common import kafka_admin

        port = free_port()
        c = DockerContainer(KAFKA_IMAGE).with_bind_ports(9092, port)
        try:
            host = c.get_container_host_ip()  # the Docker host as seen from here
        except Exception:  # noqa: BLE001 - no Docker host to ask: loopback
            host = "127.0.0.1"
        c.with_envs(
            KAFKA_NODE_ID="1",
            KAFKA_PROCESS_ROLES="broker,controller",
            KAFKA_LISTENERS="PLAINTEXT://:9092,CONTROLLER://:9093",
            KAFKA_ADVERTISED_LISTENERS=f"PLAINTEXT://{host}:{port}",
            KAFKA_CONTROLLER_LISTENER_NAMES="CONTROLLER",
            KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            KAFKA_CONTROLLER_QUORUM_VOTERS="1@localhost:9093",
            KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR="1",
            KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR="1",
            KAFKA_TRANSACTION_STATE_LOG_MIN_ISR="1",
            KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR="1",
            KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR="1",
            KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
            KAFKA_AUTO_CREATE_TOPICS_ENABLE="false",
        )
        c.start()
        self.containers.append(c)
        bootstrap = f"{host}:{port}"
        kafka_admin.wait_for_metadata(bootstrap, timeout=120)
        # Like the compose topic-init container: the contract topics with the defaults.
        s = self.settings
        kafka_admin.ensure_contract_topics(bootstrap, s.topic_prefix, s.partitions, s.retention_ms)
        return bootstrap

    def _start_redis_container(self) -> str:
        from testcontainers.community.redis import RedisContainer

        c = RedisContainer(REDIS_IMAGE)
        c.start()
        self.containers.append(c)
        return f"redis://{c.get_container_host_ip()}:{c.get_exposed_port(6379)}/0"

    def close(self) -> None:
        for c in reversed(self.containers):
            with contextlib.suppress(Exception):
                c.stop()


_resolver: _Resolver | None = None


@pytest.fixture(scope="session")
def _plylog_services():
    global _resolver
    _resolver = _Resolver()
    yield _resolver
    _resolver.close()


@pytest.fixture(scope="session")
def kafka_bootstrap(_plylog_services) -> str:
    """Bootstrap servers of a real Kafka broker, e.g. "127.0.0.1:9092"."""
    return _plylog_services.kafka().address


@pytest.fixture(scope="session")
def redis_url(_plylog_services) -> str:
    """URL of a real Redis, e.g. "redis://127.0.0.1:6379/0". Prefer `redis_db_url` /
    `redis_client` in tests: they give each test its own flushed database."""
    return _plylog_services.redis().address


@pytest.fixture(scope="session")
def plylog_stack(_plylog_services, kafka_bootstrap) -> dict | None:
    """The local stack description (stack.json) when the tests run on it, else None."""
    src = _plylog_services.found["kafka"]
    return _plylog_services.stack if src.home else None


@pytest.fixture
def topic_prefix() -> str:
    """A topic prefix unique to this test, e.g. "t1a2b3c4d." (the contract's naming, docs/contract.md)."""
    return f"t{uuid.uuid4().hex[:8]}."


@pytest.fixture
def contract_topics(kafka_bootstrap, topic_prefix):
    """Factory: create the contract topics for a prefix; they are deleted after the test.

    topics = contract_topics(partitions=3)          # uses this test's topic_prefix
    topics.moves, topics.results, topics.outcomes (1 partition), topics.deadletter
    """
    from services.common import kafka_admin

    made: list[str] = []

    def make(
        partitions: int = 3, prefix: str | None = None, retention_ms: int = plysettings.FOREVER
    ) -> plysettings.Topics:
        p = topic_prefix if prefix is None else prefix
        kafka_admin.ensure_contract_topics(kafka_bootstrap, p, partitions, retention_ms)
        topics = plysettings.Topics(p)
        made.extend([*topics.all(), *topics.personal()])
        return topics

    yield make
    try:
        _audit_what_a_rules_worker_answered(kafka_bootstrap, {t.rsplit(".", 1)[0] + "." for t in made})
    finally:
        with contextlib.suppress(Exception):
            kafka_admin.delete_topics(kafka_bootstrap, made)


def _audit_what_a_rules_worker_answered(bootstrap: str, prefixes: set[str]) -> None:
    """`plylog audit` of every prefix a rules worker ran on: the log, the results and the outcomes
    agree, whatever the test did to them (bad input, crashes, pauses)."""
    from services.cli.audit import audit
    from tests.integration.harness import AUDITED

    for prefix in sorted(prefixes & AUDITED):
        AUDITED.discard(prefix)
        report = audit(plysettings.Settings.from_env(kafka_bootstrap=bootstrap, topic_prefix=prefix))
        if not report.ok:
            pytest.fail(f"plylog audit of {prefix}* after the test: " + "; ".join(report.problems[:10]), pytrace=False)


_REDIS_DBS = itertools.cycle(range(1, 16))  # DB 0 is left to `make run`'s services


def _with_db(url: str, db: int) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{db}"))


@pytest.fixture
def redis_db_url(redis_url) -> str:
    """A Redis URL on a database of its own for this test (flushed before and after)."""
    import redis

    url = _with_db(redis_url, next(_REDIS_DBS))
    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
        yield url
        client.flushdb()
    finally:
        client.close()


@pytest.fixture
def redis_client(redis_db_url):
    """redis.Redis (bytes responses) on this test's private database."""
    import redis

    client = redis.Redis.from_url(redis_db_url)
    yield client
    client.close()


def pytest_terminal_summary(terminalreporter) -> None:
    from tests import schema_check

    for line in schema_check.summary_lines():
        terminalreporter.write_line(line)
    if _resolver is None or not _resolver.found:
        return
    for name, src in sorted(_resolver.found.items()):
        terminalreporter.write_line(f"plylog: {name} from {src.origin}: {src.address}")
