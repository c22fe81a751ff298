"""Run plylog's services as real processes against the real broker, for integration tests
(the processes themselves: bench.procs.Service, shared with the benchmarks)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import httpx
import orjson
from kafka import KafkaProducer

from bench.procs import Service, free_port
from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth
from services.common.kafka_read import read_topic
from services.common.settings import Topics
from tests.schema_check import check_topic_records

REPO = Path(__file__).resolve().parents[2]


def crash_during(
    process: Service,
    send: Callable[[], object],
    kills: int = 3,
    pause_s: tuple[float, float] = (3.0, 7.0),
    seed: int = 1,
) -> None:
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


#: Topic prefixes a rules worker ran on: the `contract_topics` fixture audits them (`plylog audit`)
#: before deleting them, so every test that runs the worker ends with a clean audit, bad input included.
AUDITED: set[str] = set()


def rules_worker(bootstrap: str, topics: Topics, home: Path, name: str = "rules-1", **env: str) -> Service:
    AUDITED.add(topics.prefix)
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "PLYLOG_TOPIC_PREFIX": topics.prefix,
        "PLYLOG_OPS_PORT": str(free_port()),
        **env,
    }
    return Service(name, "services.rules", ("--name", name), env, home)


def assigned_partitions(service: Service) -> list:
    """The partitions a rules worker or projector owns now, as its ops server's /readyz says
    (refreshed every second); [] while it does not answer (starting, paused, stopped)."""
    port = service.env.get("PLYLOG_OPS_PORT")
    assert port, f"{service.name} has no ops server (PLYLOG_OPS_PORT)"
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
        return list(answer.json().get("partitions") or [])
    except (httpx.HTTPError, ValueError):
        return []


def wait_until_assigned(service: Service, timeout: float = 90.0, wanted=None) -> list:
    """Until the service owns some partitions (or exactly `wanted`); returns them."""
    deadline = time.monotonic() + timeout
    while True:
        owned = assigned_partitions(service)
        if (owned and wanted is None) or (wanted is not None and sorted(owned) == sorted(wanted)):
            return owned
        assert time.monotonic() < deadline, f"{service.name} owns {owned} after {timeout:g} s\n{service.tail()}"
        time.sleep(0.3)


def producer(bootstrap: str) -> KafkaProducer:
    # acks=all: every write on min.insync.replicas; credentials: this process's (none on an open broker)
    return KafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, acks="all", **kafka_auth.kafka_python(KafkaAuth.from_env())
    )


def produce(
    bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes | None]], pace_s: float = 0.0
) -> int:
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
    """(partition, offset) of every move record that has a result or a dead letter (the records
    read are validated against schemas/json/, a bounded number per topic: tests/schema_check.py)."""
    results, letters = read_topic(bootstrap, topics.results), read_topic(bootstrap, topics.deadletter)
    check_topic_records("result", topics.results, results)
    check_topic_records("dead_letter", topics.deadletter, letters)
    sources = (orjson.loads(r.value)["source"] for r in results)
    done = {(s["partition"], s["offset"]) for s in sources}
    done |= {(d["partition"], d["offset"]) for d in (orjson.loads(r.value) for r in letters)}
    return done


def wait_until_some_answered(bootstrap: str, topics: Topics, at_least: int = 1, timeout: float = 60.0) -> None:
    """Until the rules workers have answered `at_least` move records (they are at work)."""
    deadline = time.monotonic() + timeout
    while len(answered_sources(bootstrap, topics)) < at_least:
        assert time.monotonic() < deadline, f"fewer than {at_least} moves answered after {timeout:g} s"
        time.sleep(0.2)


def wait_until_answered(
    bootstrap: str, topics: Topics, expected: int, timeout: float = 120.0, workers: Iterable[Service] = ()
) -> None:
    """Wait until every one of `expected` move records has a result or a dead letter."""
    deadline = time.monotonic() + timeout
    count = 0
    while time.monotonic() < deadline:
        count = len(answered_sources(bootstrap, topics))
        if count >= expected:
            return
        time.sleep(1.0)
    answered = answered_sources(bootstrap, topics)
    missing = [
        (r.partition, r.offset, r.key)
        for r in read_topic(bootstrap, topics.moves)
        if (r.partition, r.offset) not in answered
    ]
    tails = "\n\n".join(f"--- {w.name}:\n{w.tail()}" for w in workers)
    raise AssertionError(
        f"only {count} of {expected} move records answered after {timeout}s; "
        f"unanswered (partition, offset, key): {missing[:20]}\n{tails}"
    )


def mixed_bot_traffic(games: list[str], matches: int, seed: int, prefix: str) -> list[tuple[bytes, bytes]]:
    """Records of random complete matches, interleaved, with bad ones mixed in: illegal moves,
    client retries (same record again), unknown matches, garbage and mis-keyed records."""
    from bench.logs import random_match_records

    rng = random.Random(seed)
    streams = [
        iter(random_match_records(game, matches // len(games), seed=seed + i, open_at_once=25, prefix=prefix))
        for i, game in enumerate(games)
    ]
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


def keep_topics_for_diagnosis(bootstrap: str, topics: Topics, into: Path) -> Path:
    """Write every record of the stack's moves, results and rules changelog to `into` (JSON lines:
    topic, partition, offset, key, value) and return the file: an audit that fails in CI once in
    many runs is explained from the records, not guessed at from logs."""
    into.mkdir(parents=True, exist_ok=True)
    path = into / "topics.jsonl"
    with path.open("wb") as out:
        for name in (topics.moves, topics.results, topics.rules_changelog):
            try:
                records = read_topic(bootstrap, name)
            except (LookupError, TimeoutError) as error:
                out.write(orjson.dumps({"topic": name, "unreadable": str(error)}) + b"\n")
                continue
            for r in records:
                out.write(
                    orjson.dumps(
                        {
                            "topic": name,
                            "partition": r.partition,
                            "offset": r.offset,
                            "key": (r.key or b"").decode("utf-8", "replace"),
                            "value": None if r.value is None else r.value.decode("utf-8", "replace"),
                        }
                    )
                    + b"\n"
                )
    return path
