"""Run the gateway (and, for end-to-end tests, the rules worker and projector) as real processes
on the test broker and Redis, and talk to it over HTTP."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import redis

from bench.procs import Service, free_port
from services.cli._api import parse_sse
from services.cli.audit import audit
from services.common import kafka_admin
from services.common.kafka_read import read_topic
from services.common.redis_keys import Keys
from services.common.settings import Settings, Topics
from tests.integration.harness import rules_worker
from tests.schema_check import check_result

SECRET = "test-secret-0123456789abcdef"
OPERATOR_KEY = "test-operator-key-0123456789"  # a platform's server: creates matches for named players


def gateway_process(
    bootstrap: str, topics: Topics, redis_url: str, redis_prefix: str, home: Path, **env: str
) -> tuple[Service, str]:
    port = free_port()
    base = {
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "PLYLOG_TOPIC_PREFIX": topics.prefix,
        "REDIS_URL": redis_url,
        "PLYLOG_REDIS_PREFIX": redis_prefix,
        "PLYLOG_GATEWAY_PORT": str(port),
        "PLYLOG_SECRET": SECRET,
        "PLYLOG_OPERATOR_KEY": OPERATOR_KEY,
    }
    url = f"http://127.0.0.1:{port}"
    return Service("gateway", "services.gateway", (), {**base, **env}, home, ready_url=f"{url}/healthz"), url


def unique_redis_prefix() -> str:
    """Pub/sub channels are shared by every Redis database: a prefix of its own per test."""
    return f"t{uuid.uuid4().hex[:8]}:"


@dataclass
class RunningStack:
    """Rules worker, projector and gateway processes with topics and a Redis prefix of their own."""

    url: str
    topics: Topics
    bootstrap: str
    redis_url: str
    keys: Keys
    processes: list[Service]
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.url, timeout=30)

    @property
    def gateway(self) -> Service:
        return self.process("gateway")

    def process(self, name: str) -> Service:
        return next(p for p in self.processes if p.name == name)

    @property
    def settings(self) -> Settings:
        return Settings.from_env(kafka_bootstrap=self.bootstrap, topic_prefix=self.topics.prefix)

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url)

    def logs(self) -> str:
        return "\n\n".join(f"--- {p.name}:\n{p.tail(30)}" for p in self.processes)

    def restart_gateway(self) -> None:
        self.gateway.kill()
        self.gateway.start()
        self.gateway.wait_ready(timeout=60)

    def view(self, match_id: str) -> dict[str, Any]:
        response = self.http.get(f"/v1/matches/{match_id}")
        response.raise_for_status()
        return response.json()

    def creates(self) -> Counter[str]:
        """Per match id, how many create results the rules accepted as new (not `duplicate`)."""
        counts: Counter[str] = Counter()
        for record in read_topic(self.bootstrap, self.topics.results):
            result = orjson.loads(record.value)
            if str(result.get("event_id", "")).endswith(":create") and result["status"] == "accepted":
                counts[result["match_id"]] += 0 if result.get("duplicate") else 1
        return counts


@contextlib.contextmanager
def running_stack(
    bootstrap: str,
    redis_url: str,
    home: Path,
    name: str,
    partitions: int,
    bots: bool = False,
    matchmaker: bool = False,
    tournaments: bool = False,
    **gateway_env: str,
) -> Iterator[RunningStack]:
    """Start the whole stack on the test broker and Redis (with `bots`, the bot service too; with
    `matchmaker`, the matchmaker; with `tournaments`, the tournament service, last), wait
    until each process says it is ready, and stop, audit and clean up everything afterwards."""
    topics = Topics(f"{name[0]}{uuid.uuid4().hex[:8]}.")
    kafka_admin.ensure_contract_topics(bootstrap, topics.prefix, partitions)
    prefix = unique_redis_prefix()
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "PLYLOG_TOPIC_PREFIX": topics.prefix,
        "REDIS_URL": redis_url,
        "PLYLOG_REDIS_PREFIX": prefix,
    }
    worker = rules_worker(bootstrap, topics, home)
    projector = Service("projector", "services.projector", ("--name", f"projector-{name}"), env, home)
    gateway, url = gateway_process(bootstrap, topics, redis_url, prefix, home, **gateway_env)
    processes = [worker, projector, gateway]
    if bots:
        processes.insert(
            2,
            Service(
                "bots",
                "services.bots",
                ("--name", f"bots-{name}"),
                {**env, "PLYLOG_BOT_SECRET": "test-bot-secret-0123456789"},
                home,
            ),
        )
    if matchmaker:
        processes.insert(2, Service("matchmaker", "services.matchmaker", (), env, home))
    if tournaments:
        processes.append(Service("tournaments", "services.tournaments", (), env, home))
    try:
        for process in processes:
            process.start()
        for process in processes:
            process.wait_ready(timeout=90)
        yield RunningStack(url, topics, bootstrap, redis_url, Keys(prefix, partitions), processes)
    finally:
        for process in reversed(processes):
            process.stop()
        report = audit(Settings.from_env(kafka_bootstrap=bootstrap, topic_prefix=topics.prefix))
        with contextlib.suppress(Exception):
            kafka_admin.delete_topics(bootstrap, [*topics.all(), topics.tournaments, *topics.personal()])
        with contextlib.suppress(Exception):
            client = redis.Redis.from_url(redis_url)
            for key in client.scan_iter(match=f"{prefix}*", count=1000):
                client.delete(key)
            client.close()
    assert report.ok, "plylog audit of the stack's topics: " + "; ".join(report.problems[:10])


def operator() -> dict[str, str]:
    return {"Authorization": f"Bearer {OPERATOR_KEY}"}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def guest(stack: RunningStack, name: str) -> tuple[str, dict[str, str]]:
    """A guest player of the gateway: its id and the headers that carry its credential."""
    answer = stack.http.post("/v1/players", json={"name": name})
    assert answer.status_code == 201, answer.text
    return answer.json()["player"], auth(answer.json()["token"])


@dataclass
class StreamReader:
    """Reads a match's SSE stream in a thread; `results` are (event, data, id) as they come."""

    url: str
    match_id: str
    last_event_id: int | None = None
    stop_after: int | None = None  # close after this many `result` events
    validate: bool = True  # check each result against schemas/json/ (off for a test's synthetic records)
    results: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    error: BaseException | None = None
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> StreamReader:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _lines(self, response: httpx.Response) -> Iterator[str]:
        for line in response.iter_lines():
            self.raw.append(line)
            if self._stop.is_set():
                return
            yield line

    def _run(self) -> None:
        headers = {} if self.last_event_id is None else {"Last-Event-ID": str(self.last_event_id)}
        try:
            with httpx.stream(
                "GET",
                f"{self.url}/v1/matches/{self.match_id}/stream",
                headers=headers,
                timeout=httpx.Timeout(10, read=60),
            ) as response:
                assert response.status_code == 200, response.read()
                for event, data, event_id in parse_sse(self._lines(response)):
                    if self.validate and event in ("result", "rejected"):
                        check_result(data, kind="sse")
                    self.results.append((event, data, event_id))
                    accepted = sum(1 for e, _, _ in self.results if e == "result")
                    if (self.stop_after is not None and accepted >= self.stop_after) or self._stop.is_set():
                        return
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error

    def accepted_seqs(self) -> list[int]:
        return [data["seq"] for event, data, _ in self.results if event == "result"]

    def wait_for(self, condition, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition(self):
                return
            if self.error is not None:
                raise AssertionError(f"stream failed: {self.error!r}")
            time.sleep(0.05)
        raise AssertionError(f"stream condition not met after {timeout}s; got seqs {self.accepted_seqs()}")

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=70)
