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
KAFKA_BOOTSTRAP_SERVERS         127.0.0.1:<PLYLOG_KAFKA_PORT>   broker(s) to use
REDIS_URL                       redis://127.0.0.1:<PLYLOG_REDIS_PORT>/0
=============================== ============ ===============================================
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, TypeVar

DEFAULT_KAFKA_PORT = 9092
DEFAULT_CONTROLLER_PORT = 9093
DEFAULT_REDIS_PORT = 6379
DEFAULT_GATEWAY_PORT = 8000
DEFAULT_PARTITIONS = 12
DEFAULT_TOPIC_PREFIX = "plylog."
FOREVER = -1

#: Name of the file in the state dir that describes the running local stack (written by
#: `plylog up`, read by `plylog status`/`down` and by tests/conftest.py).
STACK_FILE = "stack.json"


Number = TypeVar("Number", int, float)


class SettingsError(ValueError):
    """A setting has a value that cannot be used (message says which and why)."""


def env_number(env: Mapping[str, str], name: str, default: Number, *, lo: Number | None = None,
               hi: Number | None = None) -> Number:
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
class Topics:
    """The contract topics (CONTRACT.md) for one prefix."""

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

    def all(self) -> list[str]:
        return [self.moves, self.results, self.outcomes, self.deadletter]


def topics(prefix: str = DEFAULT_TOPIC_PREFIX) -> Topics:
    return Topics(prefix)


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
    def stack_file(self) -> Path:
        return self.home / STACK_FILE

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def run_dir(self) -> Path:
        return self.home / "run"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> "Settings":
        """Read settings from the environment; keyword overrides (e.g. CLI options) win
        when not None."""
        env = os.environ if env is None else env
        values = dict(
            home=Path(env["PLYLOG_HOME"]).expanduser().resolve() if env.get("PLYLOG_HOME")
            else default_home(),
            kafka_port=env_number(env, "PLYLOG_KAFKA_PORT", DEFAULT_KAFKA_PORT, lo=1, hi=65535),
            controller_port=env_number(env, "PLYLOG_KAFKA_CONTROLLER_PORT", DEFAULT_CONTROLLER_PORT,
                                       lo=1, hi=65535),
            redis_port=env_number(env, "PLYLOG_REDIS_PORT", DEFAULT_REDIS_PORT, lo=1, hi=65535),
            gateway_port=env_number(env, "PLYLOG_GATEWAY_PORT", DEFAULT_GATEWAY_PORT, lo=1, hi=65535),
            partitions=env_number(env, "PLYLOG_PARTITIONS", DEFAULT_PARTITIONS, lo=1, hi=10000),
            topic_prefix=env.get("PLYLOG_TOPIC_PREFIX", DEFAULT_TOPIC_PREFIX),
            retention_ms=env_number(env, "PLYLOG_RETENTION_MS", FOREVER, lo=-1),
            gateway_host=env.get("PLYLOG_GATEWAY_HOST", "").strip() or "127.0.0.1",
            kafka_bootstrap=env.get("KAFKA_BOOTSTRAP_SERVERS", "").strip(),
            redis_url=env.get("REDIS_URL", "").strip(),
        )
        for key, value in overrides.items():
            if value is not None:
                values[key] = Path(value).resolve() if key == "home" else value
        values["env_kafka_bootstrap"] = bool(values["kafka_bootstrap"])
        values["env_redis_url"] = bool(values["redis_url"])
        s = cls(**values)
        if len({s.kafka_port, s.controller_port, s.redis_port, s.gateway_port}) < 4:
            raise SettingsError(
                "PLYLOG_KAFKA_PORT, PLYLOG_KAFKA_CONTROLLER_PORT, PLYLOG_REDIS_PORT and "
                f"PLYLOG_GATEWAY_PORT must differ (got {s.kafka_port}, {s.controller_port}, "
                f"{s.redis_port}, {s.gateway_port})")
        return s

    def service_env(self) -> dict[str, str]:
        """The environment plylog passes to its own services (see README, "Services")."""
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
        }


def load() -> Settings:
    """Settings from the current environment."""
    return Settings.from_env()
