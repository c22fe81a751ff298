"""Notification endpoints and preferences in Redis: what the gateway writes (a player's or the
platform's registrations, through the API) and the notifier reads (docs/notifications.md).

Every key carries the hash tag {notify}, so the notifier's outbox scripts (services/notifier/outbox.py)
may touch any of them in one call on a Redis Cluster. A player id (any text) is only ever the last
part of a key of its own family, so it names no other key.

key                                   type    content
------------------------------------  ------  -------------------------------------------------------
<p>notify:{notify}:endpoints:<owner>  hash    endpoint id -> JSON {"id","channel","secret"?,"created_at"} of a
                                              player's endpoint: its address or URL is in the player's
                                              sealed profile (profiles.py), never here; the PLATFORM's
                                              endpoints (not personal data) carry "url"|"address"
<p>notify:{notify}:prefs:<player>     string  JSON {"kinds": [...], "channels": [...]}; absent = every kind
                                              and channel
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from .redis_client import AsyncClient
from .settings import Settings

#: The kinds of notification (docs/notifications.md, "Kinds").
KINDS = ("your_move", "invited", "match_over", "clock_low")
CHANNELS = ("webhook", "email")
#: where an endpoint's address is, by channel (in a platform endpoint, or a player's sealed profile)
TARGET_FIELD = {"webhook": "url", "email": "address"}
#: The owner of the endpoints that get every player's notifications (registered by the operator).
PLATFORM = "*platform"
MAX_ENDPOINTS_PER_PLAYER = 5
MAX_PLATFORM_ENDPOINTS = 10
MAX_URL_LENGTH = 512
MAX_ADDRESS_LENGTH = 254
_EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")
_HOST = re.compile(r"^[A-Za-z0-9.-]{1,253}$")


class EndpointProblem(ValueError):
    """An endpoint that is not accepted; the message says why (for a 422)."""


@dataclass(frozen=True)
class Guard:
    """Where webhooks may not go: the stack's own ports on any address, and (unless `allow_private`)
    any loopback, private, link-local or otherwise non-public address (docs/security/notifications.md)."""

    own_ports: frozenset[int]
    allow_private: bool = False

    def address_problem(self, address: str, port: int) -> str:
        """ "" when a webhook may be sent to `address`:`port`, else why not."""
        ip = ipaddress.ip_address(address)
        if ip.version == 6 and ip.ipv4_mapped is not None:  # ::ffff:127.0.0.1 is 127.0.0.1
            ip = ip.ipv4_mapped
        if port in self.own_ports and (ip.is_loopback or ip.is_private or ip.is_unspecified):
            return f"port {port} is one of this stack's own services"
        if not self.allow_private and not ip.is_global:
            return f"{address} is not a public address (PLYLOG_NOTIFY_ALLOW_PRIVATE=1 allows it)"
        return ""


def guard_of(settings: Settings, env: Mapping[str, str]) -> Guard:
    """The guard of this stack: its Kafka, controller, Redis, gateway and ops ports (with the nodes
    `plylog up --cluster` derives from them) are never a webhook's; PLYLOG_NOTIFY_ALLOW_PRIVATE=1
    allows private and loopback addresses (a local stack, tests)."""
    ports = {settings.kafka_port + i for i in range(6)} | {settings.controller_port + i for i in range(6)}
    ports |= {settings.redis_port + i for i in range(6)} | {settings.redis_port + 10000 + i for i in range(6)}
    ports |= {settings.gateway_port + i for i in range(4)} | {settings.first_ops_port + i for i in range(20)}
    ports |= {settings.ops_port} - {0}
    allow = env.get("PLYLOG_NOTIFY_ALLOW_PRIVATE", "").strip().lower() in ("1", "true", "yes")
    return Guard(frozenset(ports), allow)


def keys_prefix(prefix: str) -> str:
    return f"{prefix}notify:{{notify}}:"


def endpoints_key(prefix: str, owner: str) -> str:
    return f"{keys_prefix(prefix)}endpoints:{owner}"


def prefs_key(prefix: str, player: str) -> str:
    return f"{keys_prefix(prefix)}prefs:{player}"


def dead_letters_key(prefix: str, owner: str) -> str:
    return f"{keys_prefix(prefix)}dead:{owner}"


def webhook_url(url: str, guard: Guard) -> tuple[str, int]:
    """(host, port) of an acceptable webhook URL; EndpointProblem otherwise. A host name is checked
    again when it is resolved, at each delivery (services/notifier/channels.py)."""
    if len(url) > MAX_URL_LENGTH:
        raise EndpointProblem(f"the URL is longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as error:
        raise EndpointProblem(f"not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise EndpointProblem(f"the scheme must be http or https, not {parts.scheme!r}")
    if parts.username is not None or parts.password is not None:
        raise EndpointProblem("no user or password in the URL (the body is signed instead)")
    host = parts.hostname or ""
    if not host or (not _HOST.match(host) and ":" not in host):
        raise EndpointProblem(f"{host!r} is not a host name or address")
    if parts.fragment:
        raise EndpointProblem("no #fragment in the URL")
    try:
        problem = guard.address_problem(host, port)
    except ValueError:
        problem = ""  # a name: checked when it is resolved
        if host.lower() == "localhost" or host.lower().endswith(".localhost"):
            problem = guard.address_problem("127.0.0.1", port)
    if problem:
        raise EndpointProblem(problem)
    return host, port


def email_address(address: str) -> str:
    if len(address) > MAX_ADDRESS_LENGTH or not _EMAIL.match(address):
        raise EndpointProblem(f"not an e-mail address (at most {MAX_ADDRESS_LENGTH} characters, local@domain)")
    return address


class Registry:
    """Endpoints and preferences of one installation (one key prefix)."""

    def __init__(self, client: AsyncClient, prefix: str):
        self.client, self.prefix = client, prefix

    async def endpoints(self, owner: str) -> list[dict[str, Any]]:
        return _endpoints(await self.client.hgetall(endpoints_key(self.prefix, owner)))

    async def lookup(
        self, owners: list[str], players: list[str]
    ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, list[str]]]]:
        """The endpoints of `owners` and the preferences of `players` in one round trip: the notifier
        asks for every player of a batch of results, and two requests a player were hundreds of
        awaits a batch."""
        async with self.client.pipeline(transaction=False) as pipe:
            for owner in owners:
                pipe.hgetall(endpoints_key(self.prefix, owner))
            for player in players:
                pipe.get(prefs_key(self.prefix, player))
            found = await pipe.execute()
        endpoints = {owner: _endpoints(f) for owner, f in zip(owners, found[: len(owners)], strict=True)}
        prefs = {player: _preferences(f) for player, f in zip(players, found[len(owners) :], strict=True)}
        return endpoints, prefs

    async def endpoint(self, owner: str, endpoint_id: str) -> dict[str, Any] | None:
        found = await self.client.hget(endpoints_key(self.prefix, owner), endpoint_id)
        return orjson.loads(found) if found else None

    async def add(self, owner: str, channel: str, target: str | None, created_at: str) -> dict[str, Any]:
        """A new endpoint (a webhook's includes its signing secret, shown once); EndpointProblem at the cap.
        `target` None: the address is kept elsewhere (a player's sealed profile), not in Redis."""
        most = MAX_PLATFORM_ENDPOINTS if owner == PLATFORM else MAX_ENDPOINTS_PER_PLAYER
        key = endpoints_key(self.prefix, owner)
        endpoint: dict[str, Any] = {"id": f"{channel[:2]}-{secrets.token_hex(8)}", "channel": channel}
        if channel == "webhook":
            endpoint["secret"] = f"whsec_{secrets.token_hex(24)}"
        if target is not None:
            endpoint[TARGET_FIELD[channel]] = target
        endpoint["created_at"] = created_at
        # check and add in one script: two requests at once cannot both take the last place
        added = await self.client.eval(_ADD, 1, key, endpoint["id"], orjson.dumps(endpoint), most)
        if not added:
            raise EndpointProblem(f"at most {most} endpoints; delete one first")
        return endpoint

    async def remove(self, owner: str, endpoint_id: str) -> bool:
        return bool(await self.client.hdel(endpoints_key(self.prefix, owner), endpoint_id))

    async def forget(self, player: str) -> bool:
        """Erasure: the player's endpoints, preferences and dead letters deleted, and every delivery
        still queued to their endpoints in the notifier's outbox (services/notifier/outbox.py) deleted
        with its payload, in one script: nothing queued for them is sent afterwards. Whether there
        was anything to delete."""
        key = endpoints_key(self.prefix, player)
        return bool(await self.client.eval(_FORGET, 1, key, keys_prefix(self.prefix), player))

    async def preferences(self, player: str) -> dict[str, list[str]]:
        return _preferences(await self.client.get(prefs_key(self.prefix, player)))

    async def dead_letters(self, owner: str, most: int = 50) -> list[dict[str, Any]]:
        """The owner's latest dead letters, newest first (written by the notifier's outbox)."""
        found = await self.client.lrange(dead_letters_key(self.prefix, owner), 0, most - 1)
        return [orjson.loads(x) for x in found]

    async def set_preferences(self, player: str, kinds: list[str], channels: list[str]) -> dict[str, list[str]]:
        prefs = {"kinds": [k for k in KINDS if k in kinds], "channels": [c for c in CHANNELS if c in channels]}
        await self.client.set(prefs_key(self.prefix, player), orjson.dumps(prefs))
        return prefs


_ADD = """
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""


# The outbox's keys (services/notifier/outbox.py): due:<endpoint> lists the endpoint's pending
# deliveries, `ready` and `pending` index endpoints. A delivery claimed right now finds its entry gone
# and ends there (its send may already be on its way: the one that cannot be called back).
_FORGET = """
local p, player = ARGV[1], ARGV[2]
local found = 0
for _, ep in ipairs(redis.call('HKEYS', KEYS[1])) do
  for _, id in ipairs(redis.call('ZRANGE', p .. 'due:' .. ep, 0, -1)) do
    redis.call('DEL', p .. 'd:' .. id)
  end
  redis.call('DEL', p .. 'due:' .. ep)
  redis.call('ZREM', p .. 'ready', ep)
  redis.call('HDEL', p .. 'pending', ep)
end
found = found + redis.call('DEL', KEYS[1], p .. 'prefs:' .. player, p .. 'dead:' .. player)
return found
"""


def public(endpoint: dict[str, Any]) -> dict[str, Any]:
    """An endpoint as the API lists it: without its secret."""
    return {k: v for k, v in endpoint.items() if k != "secret"}


def _endpoints(found: dict[Any, Any]) -> list[dict[str, Any]]:
    return sorted((orjson.loads(v) for v in found.values()), key=lambda e: (e["created_at"], e["id"]))


def _preferences(found: bytes | str | None) -> dict[str, list[str]]:
    return orjson.loads(found) if found else {"kinds": list(KINDS), "channels": list(CHANNELS)}
