"""Token buckets in Redis (per player, per client address), shared by every gateway.

A bucket holds up to `burst` tokens and refills at `rate_per_s`; an action takes one token.
Redis's own clock (TIME) is used, so gateways on machines with skewed clocks agree.

The actions that come in one turn of the event loop take their tokens in one Lua call (a
Redis round trip per action was an eighth of the gateway's CPU per socket move under load): the
call goes after the callbacks ready when the first came, so a lone action waits no longer than
that. In a Redis Cluster a call's keys must share a hash slot, so there calls are by slot.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass

from redis.crc import key_slot

from services.common.redis_client import AsyncClient

KEYS_PER_CALL = 256  # a script call holds Redis for all its keys (a few µs each)

# KEYS: the buckets, in order (one may come twice); ARGV: rate per ms, burst.
# Returns {allowed 0|1, ms until a token is there} for each key, flat.
_TAKE = """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local state = redis.call('HMGET', key, 'tokens', 'updated')
  local tokens, updated = tonumber(state[1]), tonumber(state[2])
  if tokens == nil then tokens, updated = burst, now end
  tokens = math.min(burst, tokens + math.max(0, now - updated) * rate)
  local allowed, wait = 0, 0
  if tokens >= 1 then
    tokens = tokens - 1
    allowed = 1
  else
    wait = math.ceil((1 - tokens) / rate)
  end
  redis.call('HSET', key, 'tokens', tostring(tokens), 'updated', now)
  redis.call('PEXPIRE', key, math.ceil(burst / rate) + 1000)
  out[2 * i - 1], out[2 * i] = allowed, wait
end
return out
"""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_ms: int = 0

    @property
    def retry_after_s(self) -> int:
        """Whole seconds for the Retry-After header (at least 1)."""
        return max(1, math.ceil(self.retry_after_ms / 1000))


class RateLimiter:
    """Buckets of one kind: `bucket(who)` names each one's key (a player's, an address's)."""

    def __init__(
        self,
        client: AsyncClient,
        bucket: Callable[[str], str],
        rate_per_s: float,
        burst: float,
        cluster: bool = False,
    ):
        self._bucket = bucket
        self.rate_per_s, self.burst = rate_per_s, burst
        self._args = [repr(rate_per_s / 1000.0), repr(burst)]
        self._take = client.register_script(_TAKE)
        self._cluster = cluster
        self._gathering: dict[int, list[tuple[str, asyncio.Future]]] = {}  # this turn's takes, by hash slot
        self._calls: set[asyncio.Task] = set()

    async def take(self, who: str) -> Verdict:
        key = self._bucket(who)
        slot = key_slot(key.encode()) if self._cluster else 0
        loop = asyncio.get_running_loop()
        gathering = self._gathering.get(slot)
        if gathering is None:  # the first this turn: the call goes after what is ready now
            self._gathering[slot] = gathering = []
            loop.call_soon(self._call, slot)
        verdict = loop.create_future()
        gathering.append((key, verdict))
        return await verdict  # a taker that gives up (its socket closed) leaves the call to the others

    def _call(self, slot: int) -> None:
        task = asyncio.ensure_future(self._take_all(self._gathering.pop(slot)))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _take_all(self, gathered: list[tuple[str, asyncio.Future]]) -> None:
        for start in range(0, len(gathered), KEYS_PER_CALL):  # one after the other: the takes stay in order
            await self._take_some(gathered[start : start + KEYS_PER_CALL])

    async def _take_some(self, gathering: list[tuple[str, asyncio.Future]]) -> None:
        try:
            flat = await self._take(keys=[key for key, _ in gathering], args=self._args)
        except Exception as error:  # noqa: BLE001 - Redis down: each taker gets the error as before
            for _, verdict in gathering:
                if not verdict.done():
                    verdict.set_exception(error)
            return
        for index, (_, verdict) in enumerate(gathering):
            if not verdict.done():
                verdict.set_result(Verdict(bool(flat[2 * index]), int(flat[2 * index + 1])))
