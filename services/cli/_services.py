"""Registry of plylog's own services that `plylog up` starts after Kafka and Redis.

To add a service, append a ServiceSpec to SERVICES (start order = list order; `down`
stops in reverse). A spec whose module is not written yet is skipped with a note, so the
list may name services that do not exist yet.

Each instance runs as ``<python> -m <module> <args...>`` in its own session, with
stdout+stderr appended to ``$PLYLOG_HOME/logs/<instance>.log`` and this environment
(on top of the caller's):

  KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, PLYLOG_TOPIC_PREFIX, PLYLOG_PARTITIONS,
  PLYLOG_RETENTION_MS, PLYLOG_HOME, PLYLOG_*_PORT     (see services/common/settings.py)
  PLYLOG_SERVICE      the spec name, e.g. "rules"
  PLYLOG_INSTANCE     1..N
  PLYLOG_DATA_DIR     a private directory for this instance (RocksDB, Faust datadir, ...)
  PLYLOG_READY_FILE   a path to create once ready (used when ready="file")

Readiness (`ready`):
  "alive:S"     the process is still running S seconds after start (default, S=3)
  "http:/path"  an HTTP GET to 127.0.0.1:<port><path> gets any answer (needs `port`)
  "file"        the service creates $PLYLOG_READY_FILE
`down` sends SIGTERM to the instance's process group, waits `stop_timeout`, then SIGKILL.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from typing import Callable

from services.common.settings import Settings


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    module: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    #: how many instances; gets the `plylog up` options (e.g. opts["rules_workers"]).
    #: Non-scalable services always run one instance.
    instances: Callable[[dict], int] = lambda opts: 1
    #: TCP port the service listens on (shown by status, checked free before start)
    port: Callable[[Settings], int | None] = lambda s: None
    ready: str = "alive:3"
    ready_timeout: float = 60.0
    stop_timeout: float = 15.0
    description: str = ""

    #: numbered instance names (rules-1, rules-2, ...) instead of just the name
    scalable: bool = False

    def instance_names(self, count: int) -> list[str]:
        if not self.scalable:
            return [self.name]
        return [f"{self.name}-{i}" for i in range(1, count + 1)]

    def argv(self, s: Settings, instance: int) -> list[str]:
        fmt = {"instance": instance, "gateway_port": s.gateway_port,
               "kafka": s.kafka_bootstrap, "redis": s.redis_url}
        return [sys.executable, "-m", self.module, *(a.format(**fmt) for a in self.args)]

    def available(self) -> tuple[bool, str]:
        """(True, "") if `python -m <module>` can run; else (False, why not)."""
        try:
            spec = importlib.util.find_spec(self.module)
        except (ImportError, ValueError) as exc:
            return False, f"{self.module} cannot be imported ({exc})"
        if spec is None:
            return False, f"{self.module} is not written yet"
        if spec.submodule_search_locations is not None:  # a package: needs __main__
            try:
                main = importlib.util.find_spec(self.module + ".__main__")
            except (ImportError, ValueError) as exc:
                return False, f"{self.module}.__main__ cannot be imported ({exc})"
            if main is None:
                path = self.module.replace(".", "/")
                return False, f"{self.module} is not written yet (no {path}/__main__.py)"
        return True, ""


SERVICES: list[ServiceSpec] = [
    ServiceSpec(
        name="rules",
        module="services.rules",
        instances=lambda opts: int(opts.get("rules_workers", 1)),
        scalable=True,
        ready="file",  # written once the worker has joined its group and recovered its table
        ready_timeout=120.0,
        description="rules worker (Faust): plylog.moves -> plylog.results/outcomes",
    ),
    ServiceSpec(
        name="projector",
        module="services.projector",
        ready="file",  # written once the projector has its partitions and has sought to the offsets in Redis
        description="projector: plylog.results/outcomes -> Redis views",
    ),
    ServiceSpec(
        name="gateway",
        module="services.gateway",
        port=lambda s: s.gateway_port,
        ready="http:/healthz",
        stop_timeout=10.0,
        description="HTTP API + SSE + timekeeper + web client",
    ),
    ServiceSpec(
        name="bots",
        module="services.bots",
        ready="file",  # written once it has its partitions of plylog.results
        description="bot service: plays bot:<id> seats (plylog.results -> plylog.moves)",
    ),
]


def by_name() -> dict[str, ServiceSpec]:
    return {spec.name: spec for spec in SERVICES}
