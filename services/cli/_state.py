"""The local stack's state directory: the records of the processes `plylog up` started (run/<name>.json,
.pid), stack.json (what runs and where, read by tests/conftest.py), and the lock that lets one
`up` or `down` run at a time."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from services.common.settings import Settings

from . import _kafka
from ._console import rel, say
from ._proc import ProcRecord

INFRA = ("redis", "kafka")  # the single-node stack's; a cluster's are kafka-N and redis-N


def is_cluster_record(name: str) -> bool:
    return name.startswith(("kafka-", "redis-")) and name.rsplit("-", 1)[1].isdigit()


def is_infra(name: str) -> bool:
    """Kafka or Redis (of the single-node stack or a cluster's node), not a plylog service."""
    return name in INFRA or is_cluster_record(name)


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def neg_instance(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return -int(tail) if tail.isdigit() else 0


@contextlib.contextmanager
def lock(s: Settings) -> Iterator[None]:
    s.home.mkdir(parents=True, exist_ok=True)
    with open(s.home / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another plylog up/down on {rel(s.home)} to finish ...")
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def load_records(s: Settings) -> dict[str, ProcRecord]:
    recs = {}
    if s.run_dir.is_dir():
        for f in sorted(s.run_dir.glob("*.json")):
            with contextlib.suppress(ValueError, OSError, TypeError):
                rec = ProcRecord.from_json(json.loads(f.read_text()))
                recs[rec.name] = rec
    return recs


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def save_record(s: Settings, rec: ProcRecord) -> None:
    atomic_write(s.run_dir / f"{rec.name}.json", json.dumps(rec.to_json(), indent=1))
    if rec.name != "redis":  # redis-server writes and removes its own pid file
        atomic_write(s.run_dir / f"{rec.name}.pid", f"{rec.pid}\n")


def drop_record(s: Settings, name: str) -> None:
    (s.run_dir / f"{name}.json").unlink(missing_ok=True)
    (s.run_dir / f"{name}.pid").unlink(missing_ok=True)
    (s.run_dir / f"{name}.ready").unlink(missing_ok=True)


def read_stack(home: Path) -> dict | None:
    """The stack description written by `plylog up` (None if absent/unreadable)."""
    with contextlib.suppress(ValueError, OSError):
        return json.loads((home / "stack.json").read_text())
    return None


def write_stack(s: Settings, records: dict[str, ProcRecord], *, from_up: bool = False) -> None:
    """Rewrite stack.json from the live records (removed when nothing runs). Topic settings
    are those of the last `up`; addresses come from the process records."""
    live = {n: r for n, r in records.items() if r.alive()}
    path = s.stack_file
    if not live:
        path.unlink(missing_ok=True)
        return
    prev = read_stack(s.home) or {}
    cfg = prev.get("settings")
    if from_up or not cfg:
        cfg = {
            "kafka_port": s.kafka_port,
            "controller_port": s.controller_port,
            "redis_port": s.redis_port,
            "gateway_port": s.gateway_port,
            "topic_prefix": s.topic_prefix,
            "partitions": s.partitions,
            "retention_ms": s.retention_ms,
            "replication_factor": s.replication_factor,
        }
    brokers = sorted((r.address for n, r in live.items() if n.startswith("kafka-")), key=port_of)
    redis_nodes = sorted((r.address for n, r in live.items() if n.startswith("redis-")), key=port_of)
    doc = {
        "version": 1,
        "home": str(s.home),
        "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "settings": cfg,
        "cluster": bool(brokers or redis_nodes),
        "kafka_bootstrap": live["kafka"].address if "kafka" in live else (",".join(brokers) or None),
        "redis_url": f"redis://{live['redis'].address}/0"
        if "redis" in live
        else ("redis+cluster://" + ",".join(redis_nodes) if redis_nodes else None),
        "kafka_version": _safe(_kafka.kafka_version),
        "topics": {"prefix": cfg["topic_prefix"], "partitions": cfg["partitions"]},
        "components": {n: r.to_json() for n, r in live.items()},
    }
    atomic_write(path, json.dumps(doc, indent=1))


def _safe(fn):
    with contextlib.suppress(Exception):
        return fn()
    return None
