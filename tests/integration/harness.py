"""Run plylog's services as real processes against the real broker, for integration tests."""
from __future__ import annotations

import atexit
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

import orjson
from kafka import KafkaProducer

from services.common.moves_log import read_topic
from services.common.settings import Topics

REPO = Path(__file__).resolve().parents[2]


_RUNNING: set["ServiceProcess"] = set()


@atexit.register
def _stop_leftovers() -> None:
    """A test run that ends early (Ctrl-C, SIGTERM) must not leave services behind."""
    for process in list(_RUNNING):
        process.kill()


@dataclass(eq=False)
class ServiceProcess:
    """One service process (`python -m <module>`) with its own log file; killable at will."""

    module: str
    name: str
    env: dict[str, str]
    home: Path
    args: tuple[str, ...] = ()
    process: Optional[subprocess.Popen] = None
    starts: int = 0
    logs: list[Path] = field(default_factory=list)

    @property
    def ready_file(self) -> Path:
        return self.home / f"{self.name}.ready"

    def start(self) -> "ServiceProcess":
        self.starts += 1
        log = self.home / f"{self.name}.{self.starts}.log"
        self.logs.append(log)
        self.ready_file.unlink(missing_ok=True)
        env = {**os.environ, **self.env, "PYTHONPATH": str(REPO), "PLYLOG_HOME": str(self.home),
               "PLYLOG_DATA_DIR": str(self.home / self.name), "PLYLOG_READY_FILE": str(self.ready_file)}
        self.process = subprocess.Popen([sys.executable, "-m", self.module, *self.args], cwd=REPO, env=env,
                                        stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        _RUNNING.add(self)
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.logs if p.exists())

    def wait_for_log(self, fragment: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if fragment in self.logs[-1].read_text(errors="replace"):
                return
            if not self.alive:
                raise AssertionError(f"{self.name} exited ({self.process.returncode}):\n{self.tail()}")
            time.sleep(0.2)
        raise AssertionError(f"{self.name}: no {fragment!r} in its log after {timeout}s:\n{self.tail()}")

    def wait_ready(self, timeout: float = 90.0) -> None:
        """Wait for the service's own ready file (rules worker: joined and recovered; projector:
        partitions assigned and sought to its stored offsets)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready_file.exists():
                return
            if not self.alive:
                raise AssertionError(f"{self.name} exited ({self.process.returncode}):\n{self.tail()}")
            time.sleep(0.1)
        raise AssertionError(f"{self.name} not ready after {timeout}s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.logs[-1].read_text(errors="replace").splitlines()[-lines:]) if self.logs else ""


def crash_during(process: ServiceProcess, send: Callable[[], object], kills: int = 3,
                 pause_s: tuple[float, float] = (3.0, 7.0), seed: int = 1) -> None:
    """Run `send` in a thread and, while it runs, SIGKILL and restart `process` `kills` times
    at random moments, each time waiting until it is ready again."""
    rng = random.Random(seed)
    sender = threading.Thread(target=send)
    sender.start()
    try:
        for _ in range(kills):
            time.sleep(rng.uniform(*pause_s))
            process.kill()
            process.start()
            process.wait_ready()
    finally:
        sender.join()


def rules_worker(bootstrap: str, topics: Topics, home: Path, name: str = "rules-1") -> ServiceProcess:
    env = {"KAFKA_BOOTSTRAP_SERVERS": bootstrap, "PLYLOG_TOPIC_PREFIX": topics.prefix}
    return ServiceProcess("services.rules", name, env, home, args=("--name", name))


def producer(bootstrap: str) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)


def produce(bootstrap: str, topic: str, records: Iterable[tuple[Optional[bytes], Optional[bytes]]],
            pace_s: float = 0.0) -> int:
    sender = producer(bootstrap)
    count = 0
    for key, value in records:
        sender.send(topic, key=key, value=value)
        count += 1
        if pace_s:
            time.sleep(pace_s)
    sender.flush()
    sender.close()
    return count


def answered_sources(bootstrap: str, topics: Topics) -> set[tuple[int, int]]:
    """(partition, offset) of every move record that has a result or a dead letter."""
    sources = (orjson.loads(r.value)["source"] for r in read_topic(bootstrap, topics.results))
    done = {(s["partition"], s["offset"]) for s in sources}
    done |= {(d["partition"], d["offset"]) for d in (orjson.loads(r.value) for r in read_topic(bootstrap, topics.deadletter))}
    return done


def wait_until_answered(bootstrap: str, topics: Topics, expected: int, timeout: float = 120.0,
                        workers: Iterable[ServiceProcess] = ()) -> None:
    """Wait until every one of `expected` move records has a result or a dead letter."""
    deadline = time.monotonic() + timeout
    count = 0
    while time.monotonic() < deadline:
        count = len(answered_sources(bootstrap, topics))
        if count >= expected:
            return
        time.sleep(1.0)
    answered = answered_sources(bootstrap, topics)
    missing = [(r.partition, r.offset, r.key) for r in read_topic(bootstrap, topics.moves)
               if (r.partition, r.offset) not in answered]
    tails = "\n\n".join(f"--- {w.name}:\n{w.tail()}" for w in workers)
    raise AssertionError(f"only {count} of {expected} move records answered after {timeout}s; "
                         f"unanswered (partition, offset, key): {missing[:20]}\n{tails}")


def mixed_bot_traffic(games: list[str], matches: int, seed: int, prefix: str) -> list[tuple[bytes, bytes]]:
    """Records of random complete matches, interleaved, with bad ones mixed in: illegal moves,
    client retries (same record again), unknown matches, garbage and mis-keyed records."""
    from bench.logs import random_match_records

    rng = random.Random(seed)
    streams = [iter(random_match_records(game, matches // len(games), seed=seed + i, open_at_once=25,
                                         prefix=prefix)) for i, game in enumerate(games)]
    out: list[tuple[bytes, bytes]] = []
    sent: list[tuple[bytes, bytes]] = []
    while streams:
        stream = rng.choice(streams)
        raw = next(stream, None)
        if raw is None:
            streams.remove(stream)
            continue
        key = orjson.loads(raw)["match_id"].encode()
        out.append((key, raw))
        sent.append((key, raw))
        roll = rng.random()
        if roll < 0.04:
            out.append(rng.choice(sent))  # a client retry
        elif roll < 0.07:
            data = orjson.loads(raw)
            data["event_id"] += "-bad"
            data["action"] = {"type": "resign", "extra": 1}
            out.append((key, orjson.dumps(data)))
        elif roll < 0.08:
            out.append((b"garbage", b"\x00not json"))
        elif roll < 0.09:
            data = orjson.loads(raw)
            data["event_id"] += "-wrongkey"
            out.append((b"other-" + key, orjson.dumps(data)))
        elif roll < 0.10:
            data = orjson.loads(raw)
            data["event_id"] += "-unknown"
            data["match_id"] = "nosuch-" + data["match_id"]
            out.append((data["match_id"].encode(), orjson.dumps(data)))
    return out
