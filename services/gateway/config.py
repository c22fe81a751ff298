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
PLYLOG_WORK_BUDGET_MS           30        CPU one request may spend listing legal actions or
                                          refolding a match's log (the listing is cut there,
                                          `truncated`; a longer refold goes on at the next call)
PLYLOG_MAX_MOVE_BYTES           16384     largest move record the gateway writes (413 beyond)
PLYLOG_AUTH                     guest     guest: POST /v1/players makes identities; jwt: players
                                          sign in with the platform's JWT (PLYLOG_JWT_*)
PLYLOG_OPERATOR_KEY             (file)    the operator's bearer key (creates matches for named
                                          players); unset: made once into $PLYLOG_HOME/operator.key
PLYLOG_JWT_KEY                  —         jwt mode: the shared secret (HS256)
PLYLOG_JWT_PUBLIC_KEY           —         jwt mode: a PEM public key, or @path of one (RS/ES/EdDSA)
PLYLOG_JWT_ALGORITHMS           HS256 / RS256,ES256,EdDSA   accepted algorithms (comma-separated)
PLYLOG_JWT_AUDIENCE, _ISSUER    —         required `aud` / `iss` when set
PLYLOG_JWT_PLAYER_CLAIM         sub       the claim that holds the player id
PLYLOG_ADDRESS_RATE_PER_S       20        creates, joins and new identities per second per client
PLYLOG_ADDRESS_RATE_BURST       40        address (token bucket)
PLYLOG_TRUSTED_PROXIES          —         comma-separated addresses or networks (10.0.0.0/8) of the
                                          proxies in front: from one of them, the client is the
                                          right-most X-Forwarded-For hop that is not a proxy; unset,
                                          the header is ignored and the peer address is the client
PLYLOG_MAX_BODY_BYTES           65536     larger request bodies are refused (413) unread
PLYLOG_BODY_TIMEOUT_S           10        a request body not complete this long after the app
                                          began reading it is cut off (408, connection closed)
PLYLOG_STREAMS_PER_CLIENT       32        open live streams (SSE streams and sockets) per client
                                          address over all gateways (429 beyond; a socket is closed
                                          with 4429)
PLYLOG_STREAM_LEASE_S           30        a live stream's lease in Redis lasts this long unless its
                                          gateway renews it (every third of it): how long the
                                          streams of a gateway that died still count
PLYLOG_HEAD_TIMEOUT_S           5         a request head must be complete this long after it began
                                          (or the connection opened); else 408 and closed
PLYLOG_WRITE_STALL_S            10        a connection whose client has not taken what the gateway
                                          sends for this long is torn down (reset)
PLYLOG_SOCKET_CONTROL_PER_S     10        control frames (pings, pongs) a socket may send a second,
                                          bursts of 5 s worth; more closes it with 1008
PLYLOG_SOCKET_QUEUE             256       messages a socket may have unsent (a slow client); one
                                          more closes it with 1013
PLYLOG_SOCKET_EARLY_RESULTS     1         seat sockets also take results from plylog.results, a
                                          few ms before the projector has them (0: Redis only)
PLYLOG_SOCKET_DEFLATE           0         1: offer permessage-deflate on seat sockets (results
                                          much smaller, more gateway CPU per socket move, a
                                          zlib context per socket; off as in socket.io; the
                                          figures: docs/decisions/seat-socket.md)
PLYLOG_BOT_MATCHES_PER_PLAYER   4         unfinished matches against bots one player may have
                                          (created, or joined); one more is refused (429)
=============================== ========= ====================================================
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from schemas.base import MAX_RECORD_BYTES
from services.common.redis_keys import prefix_from_env
from services.common.settings import SettingsError, env_number, secret_key

from .identity import JwtSettings

SECRET_FILE = "gateway.secret"
OPERATOR_KEY_FILE = "operator.key"


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
    work_budget_ms: float = 30.0
    max_move_bytes: int = 16384
    auth_mode: str = "guest"
    operator_key: str | None = None
    jwt: JwtSettings | None = None
    address_rate_per_s: float = 20.0
    address_rate_burst: float = 40.0
    trusted_proxies: frozenset[str] = frozenset()
    max_body_bytes: int = 65536
    body_timeout_s: float = 10.0
    streams_per_client: int = 32
    socket_queue: int = 256
    early_results: bool = True
    socket_deflate: bool = False
    bot_matches_per_player: int = 4
    stream_lease_s: float = 30.0
    head_timeout_s: float = 5.0
    write_stall_s: float = 10.0
    socket_control_per_s: float = 10.0

    @classmethod
    def from_env(cls, home: Path, env: Mapping[str, str] | None = None) -> GatewayConfig:
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
            work_budget_ms=env_number(env, "PLYLOG_WORK_BUDGET_MS", 30.0, lo=1, hi=10_000),
            max_move_bytes=env_number(env, "PLYLOG_MAX_MOVE_BYTES", 16384, lo=1024, hi=MAX_RECORD_BYTES),
            auth_mode=_auth_mode(env),
            operator_key=secret_key(home, env, "PLYLOG_OPERATOR_KEY", OPERATOR_KEY_FILE).decode(),
            jwt=_jwt(env),
            address_rate_per_s=env_number(env, "PLYLOG_ADDRESS_RATE_PER_S", 20.0, lo=0.01, hi=1e6),
            address_rate_burst=env_number(env, "PLYLOG_ADDRESS_RATE_BURST", 40.0, lo=1, hi=1e6),
            trusted_proxies=_trusted_proxies(env.get("PLYLOG_TRUSTED_PROXIES", "")),
            max_body_bytes=env_number(env, "PLYLOG_MAX_BODY_BYTES", 65536, lo=1024, hi=64 * 1024 * 1024),
            body_timeout_s=env_number(env, "PLYLOG_BODY_TIMEOUT_S", 10.0, lo=0.5, hi=300),
            streams_per_client=env_number(env, "PLYLOG_STREAMS_PER_CLIENT", 32, lo=1, hi=100_000),
            socket_queue=env_number(env, "PLYLOG_SOCKET_QUEUE", 256, lo=1, hi=100_000),
            early_results=env_number(env, "PLYLOG_SOCKET_EARLY_RESULTS", 1, lo=0, hi=1) == 1,
            socket_deflate=env_number(env, "PLYLOG_SOCKET_DEFLATE", 0, lo=0, hi=1) == 1,
            bot_matches_per_player=env_number(env, "PLYLOG_BOT_MATCHES_PER_PLAYER", 4, lo=1, hi=100_000),
            stream_lease_s=env_number(env, "PLYLOG_STREAM_LEASE_S", 30.0, lo=1, hi=3600),
            head_timeout_s=env_number(env, "PLYLOG_HEAD_TIMEOUT_S", 5.0, lo=0.5, hi=300),
            write_stall_s=env_number(env, "PLYLOG_WRITE_STALL_S", 10.0, lo=0.5, hi=3600),
            socket_control_per_s=env_number(env, "PLYLOG_SOCKET_CONTROL_PER_S", 10.0, lo=0.1, hi=100_000),
        )


def load_secret(home: Path, env: Mapping[str, str]) -> bytes:
    """PLYLOG_SECRET, else the key in $PLYLOG_HOME/gateway.secret (made once, mode 0600)."""
    return secret_key(home, env, "PLYLOG_SECRET", SECRET_FILE)


def _trusted_proxies(raw: str) -> frozenset[str]:
    """PLYLOG_TRUSTED_PROXIES: IP addresses and networks, each checked (a typo trusts nobody silently
    otherwise; "*" would let every client name itself)."""
    proxies = frozenset(p.strip() for p in raw.split(",") if p.strip())
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise SettingsError(
                f"PLYLOG_TRUSTED_PROXIES: {proxy!r} is not an IP address or network (e.g. 10.0.0.5, 10.0.0.0/8)"
            ) from None
    return proxies


def _auth_mode(env: Mapping[str, str]) -> str:
    mode = env.get("PLYLOG_AUTH", "guest").strip() or "guest"
    if mode not in ("guest", "jwt"):
        raise SettingsError(f"PLYLOG_AUTH={mode!r}: use guest (identities made by POST /v1/players) or jwt")
    return mode


def _jwt(env: Mapping[str, str]) -> JwtSettings | None:
    """The platform-token check (jwt mode), from PLYLOG_JWT_*; None in guest mode."""
    if _auth_mode(env) != "jwt":
        return None
    secret, public = env.get("PLYLOG_JWT_KEY", ""), env.get("PLYLOG_JWT_PUBLIC_KEY", "")
    if bool(secret) == bool(public):
        raise SettingsError(
            "PLYLOG_AUTH=jwt needs exactly one of PLYLOG_JWT_KEY (a shared secret, HS256) or "
            "PLYLOG_JWT_PUBLIC_KEY (a PEM public key, or @path)"
        )
    if public.startswith("@"):
        try:
            public = Path(public[1:]).read_text()
        except OSError as error:
            raise SettingsError(f"PLYLOG_JWT_PUBLIC_KEY: cannot read {public[1:]}: {error.strerror}") from None
    if secret and len(secret) < 32:
        raise SettingsError("PLYLOG_JWT_KEY is shorter than 32 characters (HS256 needs a long random secret)")
    default = "HS256" if secret else "RS256,ES256,EdDSA"
    algorithms = tuple(a.strip() for a in env.get("PLYLOG_JWT_ALGORITHMS", default).split(",") if a.strip())
    if (secret and any(not a.startswith("HS") for a in algorithms)) or (
        public and any(a.startswith("HS") for a in algorithms)
    ):
        raise SettingsError(
            f"PLYLOG_JWT_ALGORITHMS={','.join(algorithms)} does not fit the key given "
            "(HS* with PLYLOG_JWT_KEY, RS*/ES*/PS*/EdDSA with PLYLOG_JWT_PUBLIC_KEY)"
        )
    return JwtSettings(
        key=secret.encode() if secret else public,
        algorithms=algorithms,
        audience=env.get("PLYLOG_JWT_AUDIENCE") or None,
        issuer=env.get("PLYLOG_JWT_ISSUER") or None,
        player_claim=env.get("PLYLOG_JWT_PLAYER_CLAIM", "sub") or "sub",
    )
