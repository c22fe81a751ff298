"""The whole stack as real processes for end-to-end tests: rules worker, projector and gateway on
the test broker and Redis, with topics and a Redis key prefix of their own (one stack per module)."""
from __future__ import annotations

import contextlib
import time
import uuid
from pathlib import Path

import httpx
import pytest
import redis

from services.common import kafka_admin
from services.common.redis_keys import Keys
from services.common.settings import Settings, Topics
from tests.integration.harness import ServiceProcess, rules_worker

from .gateway_stack import gateway_process, unique_redis_prefix, wait_healthy

PARTITIONS = 3


class Stack:
    def __init__(self, url: str, topics: Topics, bootstrap: str, redis_url: str, keys: Keys,
                 processes: list[ServiceProcess]):
        self.url, self.topics, self.bootstrap, self.redis_url, self.keys = url, topics, bootstrap, redis_url, keys
        self.processes = processes
        self.http = httpx.Client(base_url=url, timeout=30)

    @property
    def settings(self) -> Settings:
        return Settings.from_env(kafka_bootstrap=self.bootstrap, topic_prefix=self.topics.prefix)

    def logs(self) -> str:
        return "\n\n".join(f"--- {p.name}:\n{p.tail(30)}" for p in self.processes)


def _wait_for_any_log(process: ServiceProcess, fragments: tuple[str, ...], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = process.logs[-1].read_text(errors="replace") if process.logs[-1].exists() else ""
        if any(f in text for f in fragments):
            return
        if not process.alive:
            raise AssertionError(f"{process.name} exited:\n{process.tail()}")
        time.sleep(0.2)
    raise AssertionError(f"{process.name} not ready after {timeout}s:\n{process.tail()}")


@pytest.fixture(scope="module")
def stack(kafka_bootstrap, redis_url, tmp_path_factory):
    home: Path = tmp_path_factory.mktemp("e2e")
    topics = Topics(f"e{uuid.uuid4().hex[:8]}.")
    kafka_admin.ensure_contract_topics(kafka_bootstrap, topics.prefix, PARTITIONS)
    prefix = unique_redis_prefix()
    env = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "PLYLOG_TOPIC_PREFIX": topics.prefix,
           "REDIS_URL": redis_url, "PLYLOG_REDIS_PREFIX": prefix}
    worker = rules_worker(kafka_bootstrap, topics, home)
    projector = ServiceProcess("services.projector", "projector", env, home, args=("--name", "projector-e2e"))
    gateway, url = gateway_process(kafka_bootstrap, topics, redis_url, prefix, home,
                                   # bots act far faster than people: lift the per-player limit
                                   PLYLOG_RATE_PER_S="5000", PLYLOG_RATE_BURST="5000",
                                   PLYLOG_SSE_KEEPALIVE_S="1", PLYLOG_TIMEKEEPER_INTERVAL_S="0.2")
    processes = [worker, projector, gateway]
    try:
        for process in processes:
            process.start()
        _wait_for_any_log(worker, ("assigned partitions of",))
        _wait_for_any_log(projector, ("assigned partitions", "resumed at the stored offsets"))
        wait_healthy(gateway, url)
        yield Stack(url, topics, kafka_bootstrap, redis_url, Keys(prefix), processes)
    finally:
        for process in reversed(processes):
            process.stop()
        with contextlib.suppress(Exception):
            kafka_admin.delete_topics(kafka_bootstrap, topics.all())
        with contextlib.suppress(Exception):
            client = redis.Redis.from_url(redis_url)
            for key in client.scan_iter(match=f"{prefix}*", count=1000):
                client.delete(key)
            client.close()
