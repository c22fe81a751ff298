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
  PLYLOG_OPS_PORT     the port of its /livez, /readyz and /metrics (specs with `ops_port`)
  PLYLOG_<NAME>_PORT  the port of this instance (specs with `port`, e.g. gateway-2's)

Readiness (`ready`):
  "alive:S"     the process is still running S seconds after start (default, S=3)
  "http:/path"  an HTTP GET to 127.0.0.1:<port><path> gets any answer (needs `port`)
  "file"        the service creates $PLYLOG_READY_FILE
`down` sends SIGTERM to the instance's process group, waits `stop_timeout`, then SIGKILL.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

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
    #: TCP port instance N listens on (shown by status, checked free before start)
    port: Callable[[Settings, int], int | None] = lambda s, instance: None
    #: port of instance N's ops server (/livez, /readyz, /metrics), passed as PLYLOG_OPS_PORT
    ops_port: Callable[[Settings, int], int | None] = lambda s, instance: None
    ready: str = "alive:3"
    ready_timeout: float = 60.0
    stop_timeout: float = 15.0
    description: str = ""

    #: several instances, with numbered names (rules-1, rules-2, ...)
    scalable: bool = False
    #: a single instance is numbered too (rules-1); else it has the plain name (projector)
    number_single: bool = True

    def instance_names(self, count: int) -> list[str]:
        if not self.scalable or (count == 1 and not self.number_single):
            return [self.name]
        return [f"{self.name}-{i}" for i in range(1, count + 1)]

    def owns(self, name: str) -> bool:
        """Whether `name` is an instance of this service (its plain name or a numbered one)."""
        base, _, number = name.rpartition("-")
        return name == self.name or (self.scalable and base == self.name and number.isdigit())

    def argv(self, s: Settings, instance: int) -> list[str]:
        fmt = {
            "instance": instance,
            "gateway_port": self.port(s, instance) or s.gateway_port,
            "kafka": s.kafka_bootstrap,
            "redis": s.redis_url,
        }
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
        ops_port=lambda s, instance: s.first_ops_port + instance - 1,
        description="rules worker (Faust): plylog.moves -> plylog.results/outcomes",
    ),
    ServiceSpec(
        name="projector",
        module="services.projector",
        instances=lambda opts: int(opts.get("projectors", 1)),
        scalable=True,
        number_single=False,
        ops_port=lambda s, instance: s.first_ops_port + 10 + instance - 1,
        ready="file",  # written once the projector has its partitions and has sought to the offsets in Redis
        description="projector: plylog.results/outcomes -> Redis views",
    ),
    ServiceSpec(
        name="gateway",
        module="services.gateway",
        instances=lambda opts: int(opts.get("gateways", 1)),
        scalable=True,
        number_single=False,
        port=lambda s, instance: s.gateway_port + instance - 1,
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
    ServiceSpec(
        name="notifier",
        module="services.notifier",
        ready="file",  # written once it reads its partitions from the offsets in Redis
        description="notifier: plylog.results/outcomes -> webhooks and e-mail (docs/notifications.md)",
    ),
    ServiceSpec(
        name="matchmaker",
        module="services.matchmaker",
        ready="file",  # written once it has its checkpoint and reads plylog.lobby
        description="matchmaker: seeks and pools (plylog.lobby -> creates on plylog.moves)",
    ),
    ServiceSpec(
        name="tournaments",
        module="services.tournaments",
        ready="file",  # written once it has folded plylog.tournaments to its end
        description="tournament service: plylog.tournaments + plylog.outcomes -> matches, Redis views",
    ),
]


def by_name() -> dict[str, ServiceSpec]:
    return {spec.name: spec for spec in SERVICES}
