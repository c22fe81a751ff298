"""`plylog down`: stop what `plylog up` started, services first, then Kafka, then Redis, each after
checking its pid is still the process we started; `--purge` removes the data too."""

from __future__ import annotations

import shutil

from services.common.settings import Settings

from . import _cluster_layout, _kafka_cluster
from ._console import rel, say
from ._errors import CliError
from ._proc import ProcRecord, stop
from ._services import SERVICES
from ._state import drop_record, is_infra, load_records, lock, neg_instance, write_stack

KAFKA_STOP_TIMEOUT = 60.0
REDIS_STOP_TIMEOUT = 10.0


def _stop_order(records: dict[str, ProcRecord]) -> list[str]:
    """Services first (reverse start order, highest instance first), then Kafka, Redis."""
    rank = {spec.name: i for i, spec in enumerate(SERVICES)}

    def key(name: str):
        if is_infra(name):
            return (2 if name.startswith("kafka") else 3, 0, neg_instance(name), name)
        base = name.rsplit("-", 1)[0] if neg_instance(name) else name
        return (1, -rank.get(base, len(rank)), neg_instance(name), name)

    return sorted(records, key=key)


def down_stack(s: Settings, only: set[str] | None, purge: bool) -> None:
    with lock(s):
        records = load_records(s)
        if only is not None:
            records = {n: r for n, r in records.items() if n in only or _instance_of_any(n, only)}
        if not records:
            say(f"nothing to stop: no process started by plylog up is recorded in {rel(s.run_dir)}/")
        order = _stop_order(records)
        brokers = [n for n in order if n.startswith("kafka-")]
        for name in order:
            if name in brokers[1:]:
                continue  # stopped together with the first broker
            names = brokers if name in brokers else [name]
            for stopped, result in _stop_together(s, {n: records[n] for n in names}):
                if not result.startswith("still running"):
                    drop_record(s, stopped)
        remaining = load_records(s)
        write_stack(s, remaining)
        if purge:
            if any(r.alive() for r in remaining.values()):
                raise CliError(
                    "--purge refused: some components are still running", "run `plylog down --purge` without --only"
                )
            for sub in ("kafka", "redis", "run"):
                shutil.rmtree(s.home / sub, ignore_errors=True)
            nodes = [n.name for n in _cluster_layout.kafka_nodes(s)] + [n.name for n in _cluster_layout.redis_nodes(s)]
            for name in nodes:
                shutil.rmtree(s.home / name, ignore_errors=True)
            (s.home / "kafka-cluster.id").unlink(missing_ok=True)
            _kafka_cluster.users_file(s).unlink(missing_ok=True)
            (s.home / "stack.json").unlink(missing_ok=True)
            say(f"purged Kafka data and Redis files under {rel(s.home)}/ (logs kept)")


def _instance_of_any(name: str, wanted: set[str]) -> bool:
    """`-c projector` also stops projector-1 and projector-2 (and `-c kafka` every broker)."""
    base, _, number = name.rpartition("-")
    return number.isdigit() and base in wanted


def _stop_together(s: Settings, records: dict[str, ProcRecord]) -> list[tuple[str, str]]:
    """SIGTERM each (brokers of a cluster all at once: the last one standing would wait for a
    controller quorum that is gone), wait, SIGKILL what is left. [(name, what happened)]."""
    from concurrent.futures import ThreadPoolExecutor

    def one(name: str) -> tuple[str, str]:
        rec = records[name]
        if not rec.alive():
            say(f"[bold]{name:<12}[/bold] not running (stale pid file removed)")
            return name, "not running"
        result = stop(rec, _stop_timeout(name))
        say(f"[bold]{name:<12}[/bold] {result} (pid {rec.pid})")
        return name, result

    with ThreadPoolExecutor(max_workers=max(1, len(records))) as pool:
        return list(pool.map(one, records))


def _stop_timeout(name: str) -> float:
    if name.startswith("kafka"):
        return KAFKA_STOP_TIMEOUT
    if name.startswith("redis"):
        return REDIS_STOP_TIMEOUT
    for spec in SERVICES:
        if spec.owns(name):
            return spec.stop_timeout
    return 15.0
