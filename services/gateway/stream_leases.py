"""The cap on the live streams (SSE streams and seat sockets together) one client address holds
open over all gateways (PLYLOG_STREAMS_PER_CLIENT).

Each open stream holds a lease in Redis, taken before its response starts by one script that
counts the address's leases and adds one only below the cap, so opens that come at once cannot
pass it together. A lease is released when its stream ends (a socket's: once its connection is
gone) and expires PLYLOG_STREAM_LEASE_S after its gateway last renewed it (every third of
that), so the streams of a gateway that died stop counting by themselves.

Key (not projected, see services/common/redis_keys.py): <p>streams:<address>, a zset of lease ids
("<gateway instance>:<n>") scored by their expiry in Redis's own ms (TIME, as the rate limits:
gateways with skewed clocks agree). Every call touches one key, so any hash slot will do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from services.common.redis_client import AsyncClient

from .errors import ApiError

log = logging.getLogger("plylog.gateway.streams")
RENEWING_AT_ONCE = 16  # script calls in flight while renewing

_NOW = """
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
"""
# KEYS: the address's zset; ARGV: cap, lease ms, lease id. Returns {taken 0|1, leases held now}.
_TAKE = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[1]) then return {0, held} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return {1, held + 1}
"""
)
# KEYS: the address's zset; ARGV: lease ms, lease ids. Only leases still there are renewed (XX).
_RENEW = (
    _NOW
    + """
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], last[2]) end
"""
)


@dataclass(frozen=True)
class Lease:
    key: str
    id: str
    address: str


class StreamLeases:
    def __init__(self, client: AsyncClient, key_of: Callable[[str], str], cap: int, lease_s: float):
        self._redis = client
        self._key_of = key_of
        self._cap = cap
        self._lease_ms = int(lease_s * 1000)
        self._renew_every_s = lease_s / 3
        self._take = client.register_script(_TAKE)
        self._renew = client.register_script(_RENEW)
        self._instance = uuid.uuid4().hex[:12]
        self._count = 0
        self._held: dict[str, set[str]] = defaultdict(set)  # key -> this gateway's lease ids
        self._renewing: dict[str, asyncio.Future] = {}  # key -> its renewal in flight
        self._releases: set[asyncio.Task] = set()

    @property
    def held(self) -> int:
        return sum(len(ids) for ids in self._held.values())

    async def take(self, address: str) -> Lease:
        """A lease for one more stream of `address`, or ApiError 429 at the cap (Redis errors pass)."""
        self._count += 1
        lease = Lease(self._key_of(address), f"{self._instance}:{self._count}", address)
        taken, held = await self._take(keys=[lease.key], args=[self._cap, self._lease_ms, lease.id])
        if not taken:
            raise ApiError(
                429,
                "rate_limited",
                f"{address} has {held} live streams open, the most one client may (PLYLOG_STREAMS_PER_CLIENT); "
                "close one",
                headers={"Retry-After": "5"},
            )
        self._held[lease.key].add(lease.id)
        return lease

    def release(self, lease: Lease) -> None:
        """The stream ended: its lease goes (in the background; if Redis is down, it expires)."""
        ids = self._held.get(lease.key)
        if ids is None or lease.id not in ids:
            return
        ids.discard(lease.id)
        if not ids:
            del self._held[lease.key]
        task = asyncio.ensure_future(self._remove(lease))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def _remove(self, lease: Lease) -> None:
        renewing = self._renewing.get(lease.key)
        if renewing is not None:  # a renewal that read the lease as held must not land after this
            with contextlib.suppress(Exception):
                await asyncio.shield(renewing)
        try:
            await self._redis.zrem(lease.key, lease.id)
        except Exception as error:  # noqa: BLE001 - it expires instead
            log.warning("stream lease %s of %s not released (%s); it expires by itself", lease.id, lease.address, error)

    async def run(self) -> None:
        """Renews this gateway's leases every third of their life, until cancelled."""
        while True:
            await asyncio.sleep(self._renew_every_s)
            try:
                await self.renew()
            except Exception as error:  # noqa: BLE001 - next time; a lease outlives two missed renewals
                log.warning("renewing %d stream leases failed: %s", self.held, error)

    async def renew(self) -> None:
        keys = list(self._held)
        for start in range(0, len(keys), RENEWING_AT_ONCE):
            await asyncio.gather(*(self._renew_key(key) for key in keys[start : start + RENEWING_AT_ONCE]))

    async def _renew_key(self, key: str) -> None:
        ids = self._held.get(key)
        if not ids:
            return
        done = asyncio.get_running_loop().create_future()
        self._renewing[key] = done
        try:
            await self._renew(keys=[key], args=[self._lease_ms, *ids])
        finally:
            del self._renewing[key]
            done.set_result(None)

    async def close(self) -> None:
        """Release every lease this gateway holds (its streams end with it)."""
        leases = [Lease(key, lease_id, "") for key, ids in self._held.items() for lease_id in ids]
        for lease in leases:
            self.release(lease)
        if self._releases:
            await asyncio.wait(list(self._releases), timeout=2)


class LeasedStream(StreamingResponse):
    """A streaming response that releases its stream's lease however it ends (even unstarted)."""

    def __init__(self, leases: StreamLeases, lease: Lease, content: AsyncIterator[str], **kwargs):
        super().__init__(content, **kwargs)
        self._leases, self._lease = leases, lease

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._leases.release(self._lease)
