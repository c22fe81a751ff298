"""plylog settings: every environment variable the services and the CLI read, in one place.

Import-light on purpose (standard library only), so any service or test can use it.

Environment variables (all optional):

=============================== ============ ===============================================
variable                        default      meaning
=============================== ============ ===============================================
PLYLOG_HOME                     <repo>/.plylog  state dir: pid files, logs, Kafka data, Redis dir
PLYLOG_KAFKA_PORT               9092         local broker's client (PLAINTEXT) port
PLYLOG_KAFKA_CONTROLLER_PORT    9093         local broker's KRaft controller port
PLYLOG_REDIS_PORT               6379         local Redis port
PLYLOG_GATEWAY_PORT             8000         HTTP gateway port
PLYLOG_GATEWAY_HOST             127.0.0.1    address the gateway binds (0.0.0.0 in containers)
PLYLOG_PARTITIONS               12           partitions of moves/results/deadletter
PLYLOG_TOPIC_PREFIX             plylog.      prefix of every topic name
PLYLOG_RETENTION_MS             -1           retention of results/outcomes/deadletter
                                             (-1 = forever; moves is always forever)
PLYLOG_REPLICATION_FACTOR       1            replicas of every topic plylog creates (its own and
                                             Faust's changelog); 3 on a cluster
PLYLOG_MIN_INSYNC_REPLICAS      1            min.insync.replicas of those topics (2 on a cluster:
                                             with acks=all a write survives one broker's loss)
PLYLOG_OPS_PORT                 (off)        rules worker / projector: port of the small HTTP server
                                             with /livez, /readyz and /metrics (unset: none)
PLYLOG_OPS_HOST                 127.0.0.1    address that server binds (0.0.0.0 in containers)
PLYLOG_READY_LAG                1000         /readyz: most records a service may be behind and ready
PLYLOG_DATA_DIR                 (per service) a service instance's private directory (set by plylog up)
PLYLOG_READY_FILE               (none)       a file a service creates once ready (set by plylog up)
PLYLOG_TRACE_DIR                (off)        rules worker, projector: per-record stage times there
                                             (services/common/stage_trace.py; `python -m bench.trace`)
PLYLOG_RULES_*                               the rules worker's tunables (RulesSettings below)
KAFKA_BOOTSTRAP_SERVERS         127.0.0.1:<PLYLOG_KAFKA_PORT>   broker(s) to use, comma-separated
PLYLOG_KAFKA_USERNAME           (none)       this process's Kafka user (SASL/SCRAM over SASL_PLAINTEXT);
                                             unset: no credentials (the single-node stack's open broker)
PLYLOG_KAFKA_PASSWORD           (none)       that user's password (required with a username)
PLYLOG_KAFKA_SASL_MECHANISM     SCRAM-SHA-512  or SCRAM-SHA-256
REDIS_URL                       redis://127.0.0.1:<PLYLOG_REDIS_PORT>/0
                                             or redis+cluster://host:port[,host:port...] for a
                                             Redis Cluster (any of its nodes; no database number)
=============================== ============ ===============================================

`plylog up --cluster` derives every node's port from the bases above: broker i (0, 1, 2) at
PLYLOG_KAFKA_PORT + 2i with its controller at PLYLOG_KAFKA_CONTROLLER_PORT + 2i, Redis node i
(0..5) at PLYLOG_REDIS_PORT + i (cluster bus + 10000), gateway i at PLYLOG_GATEWAY_PORT + i,
and the ops ports of rules worker i at PLYLOG_OPS_PORT_BASE + i - 1 and of projector i at
PLYLOG_OPS_PORT_BASE + 10 + i - 1 (default PLYLOG_GATEWAY_PORT + 100).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from .kafka_auth import KafkaAuth, KafkaAuthError

DEFAULT_KAFKA_PORT = 9092
DEFAULT_CONTROLLER_PORT = 9093
DEFAULT_REDIS_PORT = 6379
DEFAULT_GATEWAY_PORT = 8000
DEFAULT_PARTITIONS = 12
DEFAULT_TOPIC_PREFIX = "plylog."
FOREVER = -1
DEFAULT_READY_LAG = 1000
REDIS_CLUSTER_SCHEME = "redis+cluster://"

#: Name of the file in the state dir that describes the running local stack (written by
#: `plylog up`, read by `plylog status`/`down` and by tests/conftest.py).
STACK_FILE = "stack.json"


Number = TypeVar("Number", int, float)


class SettingsError(ValueError):
    """A setting has a value that cannot be used (message says which and why)."""


def env_number(
    env: Mapping[str, str], name: str, default: Number, *, lo: Number | None = None, hi: Number | None = None
) -> Number:
    """The number in env[name] (an int when the default is one, else a float), or the default
    when unset; SettingsError when it is not a number or outside [lo, hi]."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    kind = int if isinstance(default, int) else float
    try:
        value = kind(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not {'an integer' if kind is int else 'a number'}") from None
    if not (lo is None or lo <= value) or not (hi is None or value <= hi):  # NaN fails both
        raise SettingsError(f"{name}={value} is out of range [{lo}, {hi}]")
    return value


def secret_key(home: Path, env: Mapping[str, str], variable: str, file_name: str) -> bytes:
    """The key in `variable`, else the one in $PLYLOG_HOME/<file_name> (made once, mode 0600), so
    that every gateway of a local stack shares it and the CLI on this machine can read it."""
    given = env.get(variable, "")
    if given:
        if len(given) < 16:
            raise SettingsError(f"{variable} is shorter than 16 characters; use a long random value")
        return given.encode()
    path = home / file_name
    home.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass  # made before (or by a gateway starting at the same moment)
    else:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
    key = path.read_text().strip()
    if len(key) < 16:
        raise SettingsError(f"{path} holds no usable key (shorter than 16 characters); delete it to make a new one")
    return key.encode()


def repo_root() -> Path | None:
    """The source checkout this package runs from (editable install), or None."""
    here = Path(__file__).resolve().parents[2]
    if (here / "pyproject.toml").is_file() and (here / "services").is_dir():
        return here
    return None


def default_home() -> Path:
    root = repo_root()
    return (root if root is not None else Path.cwd()) / ".plylog"


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """${XDG_CACHE_HOME:-$HOME/.cache}/plylog — where downloaded Kafka jars are kept."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "plylog"


@dataclass(frozen=True)
class RedisTarget:
    """Where Redis is, from REDIS_URL: one server (`redis://host:port/db`, any URL redis-py takes)
    or a Redis Cluster (`redis+cluster://host:port,host:port`: some of its nodes, database 0)."""

    url: str
    cluster: bool = False
    nodes: tuple[tuple[str, int], ...] = ()

    @classmethod
    def parse(cls, url: str) -> RedisTarget:
        if not url.startswith(REDIS_CLUSTER_SCHEME):
            return cls(url)
        rest = url[len(REDIS_CLUSTER_SCHEME) :].split("/", 1)
        if len(rest) > 1 and rest[1] not in ("", "0"):
            raise SettingsError(f"REDIS_URL={url!r}: a Redis Cluster has only database 0")
        nodes = []
        for part in rest[0].split(","):
            host, _, port = part.strip().rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise SettingsError(
                    f"REDIS_URL={url!r}: {part!r} is not host:port (use redis+cluster://host:port,host:port)"
                )
            nodes.append((host, int(port)))
        return cls(url, True, tuple(nodes))

    @classmethod
    def cluster_of(cls, nodes: list[tuple[str, int]]) -> RedisTarget:
        url = REDIS_CLUSTER_SCHEME + ",".join(f"{h}:{p}" for h, p in nodes)
        return cls(url, True, tuple(nodes))


@dataclass(frozen=True)
class Topics:
    """The contract topics (docs/contract.md) for one prefix."""

    prefix: str = DEFAULT_TOPIC_PREFIX

    @property
    def moves(self) -> str:
        return f"{self.prefix}moves"

    @property
    def results(self) -> str:
        return f"{self.prefix}results"

    @property
    def outcomes(self) -> str:
        return f"{self.prefix}outcomes"

    @property
    def deadletter(self) -> str:
        return f"{self.prefix}deadletter"

    @property
    def lobby(self) -> str:
        """Seeks, pools and the matchmaker's ticks (docs/matchmaking.md): one partition, one fold."""
        return f"{self.prefix}lobby"

    @property
    def tournaments(self) -> str:
        """Tournament records (docs/tournaments.md), keyed by tournament id."""
        return f"{self.prefix}tournaments"

    @property
    def profiles(self) -> str:
        """Players' profiles, each sealed with the player's own key (docs/personal-data.md); compacted."""
        return f"{self.prefix}profiles"

    @property
    def player_keys(self) -> str:
        """The per-player keys that open the profiles; erasure is a tombstone here; compacted."""
        return f"{self.prefix}player-keys"

    def all(self) -> list[str]:
        return [self.moves, self.results, self.outcomes, self.deadletter, self.lobby]

    def personal(self) -> tuple[str, str]:
        """The topics with personal data (not in `all()`: readers and audits never read them)."""
        return (self.profiles, self.player_keys)

    def single_partition(self) -> tuple[str, ...]:
        """The topics that always have one partition (each is one ordered fold)."""
        return (self.outcomes, self.lobby, self.tournaments)

    @property
    def tournaments_group(self) -> str:
        """The tournament service's consumer group on plylog.outcomes (its offsets of fed-back outcomes)."""
        return f"{self.prefix}tournaments"

    @property
    def rules_group(self) -> str:
        """The rules workers' consumer group: their Faust app's id."""
        return f"{self.prefix}rules"

    @property
    def bots_group(self) -> str:
        """The bot services' consumer group on plylog.results."""
        return f"{self.prefix}bots"

    @property
    def rules_changelog(self) -> str:
        """The rules worker's Faust changelog (restricted): app `<prefix>rules`, table `matches`."""
        return f"{self.rules_group}-matches-changelog"


def topics(prefix: str = DEFAULT_TOPIC_PREFIX) -> Topics:
    return Topics(prefix)


@dataclass(frozen=True)
class RulesSettings:
    """The rules worker's tunables (docs/operations.md lists them; services/rules/ uses them)."""

    #: records a batch folds at most (PLYLOG_RULES_BATCH); the buffer ahead of the fold holds two
    batch_max: int = 500
    #: how long a short batch waits for more while records come together (a lone move: not at all)
    batch_within_s: float = 0.002
    #: workers keeping a hot copy of each table partition (Faust standbys)
    standby_replicas: int = 1
    #: the producer's linger while many moves come together (from `busy_records` on; fewer: none)
    busy_linger_s: float = 0.002
    busy_records: int = 32
    #: aiokafka's fetch long-poll (Faust hard-codes 1.5 s; docs/decisions/faust-fetch-long-poll.md)
    fetch_max_wait_ms: int = 50
    #: how long a batch's records are retried while Kafka refuses them before the batch fails
    produce_timeout_s: float = 60.0
    #: how long a worker whose batch failed may take to stop before it exits anyway
    stop_deadline_s: float = 30.0
    #: how often the states of finished matches the fold has forgotten are deleted
    sweep_interval_s: float = 10.0

    @property
    def buffer_capacity(self) -> int:
        """Move records read ahead of the fold: a backlog fills whole batches."""
        return 2 * self.batch_max

    @property
    def in_flight_records(self) -> int:
        """Records folded but not stored yet at most (8 full batches): the fold waits beyond it.
        On records, not batches: many small batches never wait (docs/decisions/rules-latency.md)."""
        return 8 * self.batch_max

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RulesSettings:
        return cls(
            batch_max=env_number(env, "PLYLOG_RULES_BATCH", 500, lo=1),
            batch_within_s=env_number(env, "PLYLOG_RULES_BATCH_WITHIN_S", 0.002, lo=0),
            standby_replicas=env_number(env, "PLYLOG_RULES_STANDBY_REPLICAS", 1, lo=0, hi=8),
            busy_linger_s=env_number(env, "PLYLOG_RULES_BUSY_LINGER_MS", 2, lo=0, hi=100) / 1000,
            fetch_max_wait_ms=env_number(env, "PLYLOG_RULES_FETCH_WAIT_MS", 50, lo=0),
            produce_timeout_s=env_number(env, "PLYLOG_RULES_PRODUCE_TIMEOUT_S", 60.0, lo=1),
            stop_deadline_s=env_number(env, "PLYLOG_RULES_STOP_DEADLINE_S", 30.0, lo=1),
            sweep_interval_s=env_number(env, "PLYLOG_RULES_SWEEP_INTERVAL_S", 10.0, lo=0.1),
        )


@dataclass(frozen=True)
class Settings:
    home: Path
    kafka_port: int = DEFAULT_KAFKA_PORT
    controller_port: int = DEFAULT_CONTROLLER_PORT
    redis_port: int = DEFAULT_REDIS_PORT
    gateway_port: int = DEFAULT_GATEWAY_PORT
    partitions: int = DEFAULT_PARTITIONS
    topic_prefix: str = DEFAULT_TOPIC_PREFIX
    retention_ms: int = FOREVER
    gateway_host: str = "127.0.0.1"
    kafka_bootstrap: str = ""
    redis_url: str = ""
    replication_factor: int = 1
    min_insync_replicas: int = 1
    ops_port: int = 0  # 0: no ops HTTP server
    ops_host: str = "127.0.0.1"
    ops_port_base: int = 0  # 0: gateway_port + 100
    ready_lag: int = DEFAULT_READY_LAG
    #: PLYLOG_DATA_DIR: this instance's own directory (None: the service picks one)
    data_dir: Path | None = field(default=None, compare=False)
    ready_file: Path | None = field(default=None, compare=False)  # PLYLOG_READY_FILE: made once ready
    trace_dir: Path | None = field(default=None, compare=False)  # PLYLOG_TRACE_DIR: stage times (None: off)
    #: PLYLOG_RECEIPT_KEYS_DIR: where receipt-keys.json lives (None: PLYLOG_HOME); every gateway and
    #: exporter of one deployment must share it, or each signs with and publishes its own key
    keys_dir: Path | None = field(default=None, compare=False)
    rules: RulesSettings = field(default_factory=RulesSettings, compare=False)
    #: this process's Kafka credentials (PLYLOG_KAFKA_USERNAME ...); None: an open broker
    kafka_auth: KafkaAuth | None = field(default=None, compare=False)
    env_kafka_bootstrap: bool = field(default=False, compare=False)
    env_redis_url: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if not self.kafka_bootstrap:
            object.__setattr__(self, "kafka_bootstrap", f"127.0.0.1:{self.kafka_port}")
        if not self.redis_url:
            object.__setattr__(self, "redis_url", f"redis://127.0.0.1:{self.redis_port}/0")

    @property
    def topics(self) -> Topics:
        return Topics(self.topic_prefix)

    @property
    def kafka_servers(self) -> list[str]:
        """The bootstrap servers as a list (KAFKA_BOOTSTRAP_SERVERS is comma-separated)."""
        return [part.strip() for part in self.kafka_bootstrap.split(",") if part.strip()]

    @property
    def redis(self) -> RedisTarget:
        """REDIS_URL parsed: one Redis or a Redis Cluster (see RedisTarget)."""
        return RedisTarget.parse(self.redis_url)

    @property
    def first_ops_port(self) -> int:
        return self.ops_port_base or self.gateway_port + 100

    @property
    def stack_file(self) -> Path:
        return self.home / STACK_FILE

    @property
    def receipt_keys_dir(self) -> Path:
        return self.keys_dir or self.home

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def run_dir(self) -> Path:
        return self.home / "run"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> Settings:
        """Read settings from the environment; keyword overrides (e.g. CLI options) win
        when not None."""
        env = os.environ if env is None else env
        values = dict(
            home=Path(env["PLYLOG_HOME"]).expanduser().resolve() if env.get("PLYLOG_HOME") else default_home(),
            kafka_port=env_number(env, "PLYLOG_KAFKA_PORT", DEFAULT_KAFKA_PORT, lo=1, hi=65535),
            controller_port=env_number(env, "PLYLOG_KAFKA_CONTROLLER_PORT", DEFAULT_CONTROLLER_PORT, lo=1, hi=65535),
            redis_port=env_number(env, "PLYLOG_REDIS_PORT", DEFAULT_REDIS_PORT, lo=1, hi=65535),
            gateway_port=env_number(env, "PLYLOG_GATEWAY_PORT", DEFAULT_GATEWAY_PORT, lo=1, hi=65535),
            partitions=env_number(env, "PLYLOG_PARTITIONS", DEFAULT_PARTITIONS, lo=1, hi=10000),
            topic_prefix=env.get("PLYLOG_TOPIC_PREFIX", DEFAULT_TOPIC_PREFIX),
            retention_ms=env_number(env, "PLYLOG_RETENTION_MS", FOREVER, lo=-1),
            gateway_host=env.get("PLYLOG_GATEWAY_HOST", "").strip() or "127.0.0.1",
            kafka_bootstrap=env.get("KAFKA_BOOTSTRAP_SERVERS", "").strip(),
            redis_url=env.get("REDIS_URL", "").strip(),
            replication_factor=env_number(env, "PLYLOG_REPLICATION_FACTOR", 1, lo=1, hi=32),
            min_insync_replicas=env_number(env, "PLYLOG_MIN_INSYNC_REPLICAS", 1, lo=1, hi=32),
            ops_port=env_number(env, "PLYLOG_OPS_PORT", 0, lo=0, hi=65535),
            ops_host=env.get("PLYLOG_OPS_HOST", "").strip() or "127.0.0.1",
            ops_port_base=env_number(env, "PLYLOG_OPS_PORT_BASE", 0, lo=0, hi=65535),
            ready_lag=env_number(env, "PLYLOG_READY_LAG", DEFAULT_READY_LAG, lo=0),
            data_dir=_path(env, "PLYLOG_DATA_DIR"),
            ready_file=_path(env, "PLYLOG_READY_FILE"),
            trace_dir=_path(env, "PLYLOG_TRACE_DIR"),
            keys_dir=_path(env, "PLYLOG_RECEIPT_KEYS_DIR"),
            rules=RulesSettings.from_env(env),
        )
        for key, value in overrides.items():
            if value is not None:
                values[key] = Path(value).resolve() if key == "home" else value
        if values.get("kafka_auth") is None:
            try:
                values["kafka_auth"] = KafkaAuth.from_env(env)
            except KafkaAuthError as error:
                raise SettingsError(str(error)) from None
        values["env_kafka_bootstrap"] = bool(values["kafka_bootstrap"])
        values["env_redis_url"] = bool(values["redis_url"])
        s = cls(**values)
        if len({s.kafka_port, s.controller_port, s.redis_port, s.gateway_port}) < 4:
            raise SettingsError(
                "PLYLOG_KAFKA_PORT, PLYLOG_KAFKA_CONTROLLER_PORT, PLYLOG_REDIS_PORT and "
                f"PLYLOG_GATEWAY_PORT must differ (got {s.kafka_port}, {s.controller_port}, "
                f"{s.redis_port}, {s.gateway_port})"
            )
        if s.min_insync_replicas > s.replication_factor:
            raise SettingsError(
                f"PLYLOG_MIN_INSYNC_REPLICAS={s.min_insync_replicas} is more than "
                f"PLYLOG_REPLICATION_FACTOR={s.replication_factor}: no write could succeed"
            )
        _ = s.redis  # a REDIS_URL that cannot be used is refused here, with the reason
        return s

    def service_env(self) -> dict[str, str]:
        """The environment plylog passes to its own services (docs/operations.md, "Services")."""
        return {
            "PLYLOG_HOME": str(self.home),
            "KAFKA_BOOTSTRAP_SERVERS": self.kafka_bootstrap,
            "REDIS_URL": self.redis_url,
            "PLYLOG_TOPIC_PREFIX": self.topic_prefix,
            "PLYLOG_PARTITIONS": str(self.partitions),
            "PLYLOG_RETENTION_MS": str(self.retention_ms),
            "PLYLOG_KAFKA_PORT": str(self.kafka_port),
            "PLYLOG_KAFKA_CONTROLLER_PORT": str(self.controller_port),
            "PLYLOG_REDIS_PORT": str(self.redis_port),
            "PLYLOG_GATEWAY_PORT": str(self.gateway_port),
            "PLYLOG_GATEWAY_HOST": self.gateway_host,
            "PLYLOG_REPLICATION_FACTOR": str(self.replication_factor),
            "PLYLOG_MIN_INSYNC_REPLICAS": str(self.min_insync_replicas),
        }


def _path(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name, "").strip()
    return Path(raw).expanduser() if raw else None


def load() -> Settings:
    """Settings from the current environment."""
    return Settings.from_env()
