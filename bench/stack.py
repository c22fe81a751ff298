"""Where the benchmarks run: a Kafka broker and a Redis, and a private set of topics and Redis
keys for every measured run (so runs never see each other's records and leave nothing behind)."""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from services.common import kafka_admin, redis_client
from services.common.settings import Topics


def bench_dir(home: Path) -> Path:
    """The benchmarks' own files under a plylog home: the load cache, logs of the last runs
    (and the stack `plylog bench` starts when none runs)."""
    return home / "bench"


@dataclass(frozen=True)
class BenchStack:
    bootstrap: str | None  # None (with redis_url): no Kafka and Redis, for scenarios that need none
    redis_url: str | None
    work_dir: Path  # logs and data of the processes the benchmarks start; the load cache
    partitions: int = 12
    replication: int = 1  # 3 on a cluster (with min.insync.replicas 2)

    @property
    def min_insync(self) -> int:
        return 2 if self.replication >= 3 else 1

    @property
    def cache_dir(self) -> Path:
        return self.work_dir / "cache"

    @contextlib.contextmanager
    def run_space(self, label: str) -> Iterator[RunSpace]:
        """Fresh contract topics and a fresh Redis key prefix for one run; all deleted afterwards
        (with the topics Faust makes for itself under the same prefix)."""
        token = uuid.uuid4().hex[:8]
        space = RunSpace(
            Topics(f"bench-{label}-{token}."), f"bench:{label}:{token}:", self.work_dir / "runs" / f"{label}-{token}"
        )
        space.dir.mkdir(parents=True)
        kafka_admin.ensure_contract_topics(
            self.bootstrap,
            space.topics.prefix,
            self.partitions,
            replication=self.replication,
            min_insync=self.min_insync,
        )
        try:
            yield space
        finally:
            with contextlib.suppress(Exception):
                self._delete_topics(space.topics.prefix)
            with contextlib.suppress(Exception):
                self._delete_keys(space.redis_prefix)
            shutil.rmtree(space.dir / "data", ignore_errors=True)

    def _delete_topics(self, prefix: str) -> None:
        with kafka_admin.admin(self.bootstrap) as client:
            names = [name for name in client.list_topics() if name.startswith(prefix)]
        kafka_admin.delete_topics(self.bootstrap, names)

    def _delete_keys(self, prefix: str) -> None:
        client = redis_client.connect(self.redis_url)
        try:
            for node in redis_client.nodes(client):
                pipe = node.pipeline(transaction=False)
                for key in node.scan_iter(match=f"{prefix}*", count=5000):
                    pipe.unlink(key)  # one key a command: on a cluster node the keys are of many slots
                pipe.execute()
        finally:
            client.close()


@dataclass(frozen=True)
class RunSpace:
    topics: Topics
    redis_prefix: str
    dir: Path
