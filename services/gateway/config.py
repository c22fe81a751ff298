"""The gateway's own settings (on top of services.common.settings), all from the environment.

=============================== ========= ====================================================
variable                        default   meaning
=============================== ========= ====================================================
PLYLOG_SECRET                   (file)    key of the seat tokens; unset: a random key made once
                                          into $PLYLOG_HOME/gateway.secret
PLYLOG_REDIS_PREFIX             plylog:   key prefix of the projection in Redis
PLYLOG_RATE_PER_S               10        actions per second a player may send (token bucket)
PLYLOG_RATE_BURST               20        bucket size: actions a player may send at once
PLYLOG_WAIT_TIMEOUT_S           10        default (and largest: 60) wait of `?wait=true`
PLYLOG_SSE_KEEPALIVE_S          15        seconds between keep-alive comments on streams
PLYLOG_TIMEKEEPER_INTERVAL_S    0.5       how often the timekeeper looks for run-out clocks
                                          (0 disables it)
PLYLOG_LEGAL_ACTIONS_CAP        500       most legal actions one response lists
=============================== ========= ====================================================
"""
from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from services.common.redis_keys import prefix_from_env
from services.common.settings import SettingsError, env_number

SECRET_FILE = "gateway.secret"


@dataclass(frozen=True)
class GatewayConfig:
    secret: bytes
    redis_prefix: str = "plylog:"
    rate_per_s: float = 10.0
    rate_burst: float = 20.0
    wait_timeout_s: float = 10.0
    keepalive_s: float = 15.0
    timekeeper_interval_s: float = 0.5
    legal_actions_cap: int = 500

    @classmethod
    def from_env(cls, home: Path, env: Mapping[str, str] | None = None) -> "GatewayConfig":
        env = os.environ if env is None else env
        return cls(
            secret=load_secret(home, env),
            redis_prefix=prefix_from_env(),
            rate_per_s=env_number(env, "PLYLOG_RATE_PER_S", 10.0, lo=0.01, hi=1e6),
            rate_burst=env_number(env, "PLYLOG_RATE_BURST", 20.0, lo=1, hi=1e6),
            wait_timeout_s=env_number(env, "PLYLOG_WAIT_TIMEOUT_S", 10.0, lo=0.1, hi=60),
            keepalive_s=env_number(env, "PLYLOG_SSE_KEEPALIVE_S", 15.0, lo=0.05, hi=3600),
            timekeeper_interval_s=env_number(env, "PLYLOG_TIMEKEEPER_INTERVAL_S", 0.5, lo=0, hi=3600),
            legal_actions_cap=int(env_number(env, "PLYLOG_LEGAL_ACTIONS_CAP", 500.0, lo=1, hi=100_000)),
        )


def load_secret(home: Path, env: Mapping[str, str]) -> bytes:
    """PLYLOG_SECRET, else the key in $PLYLOG_HOME/gateway.secret (made once, mode 0600)."""
    given = env.get("PLYLOG_SECRET", "")
    if given:
        if len(given) < 16:
            raise SettingsError("PLYLOG_SECRET is shorter than 16 characters; use a long random value")
        return given.encode()
    path = home / SECRET_FILE
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
        raise SettingsError(f"{path} holds no usable secret (shorter than 16 characters); delete it to make a new one")
    return key.encode()
