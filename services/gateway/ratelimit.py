"""Token buckets in Redis (per player, per client address) (one Lua call per action, shared by every gateway).

A bucket holds up to `burst` tokens and refills at `rate_per_s`; an action takes one token.
Redis's own clock (TIME) is used, so gateways on machines with skewed clocks agree.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import redis.asyncio as aioredis

# KEYS[1] bucket; ARGV: rate per ms, burst. Returns {allowed 0|1, ms until one token is there}.
_TAKE = """
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'updated')
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
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'updated', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate) + 1000)
return {allowed, wait}
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

    def __init__(self, client: aioredis.Redis, bucket: Callable[[str], str], rate_per_s: float, burst: float):
        self._bucket = bucket
        self._rate_per_ms = rate_per_s / 1000.0
        self._burst = burst
        self._take = client.register_script(_TAKE)

    async def take(self, who: str) -> Verdict:
        allowed, wait_ms = await self._take(keys=[self._bucket(who)], args=[repr(self._rate_per_ms), repr(self._burst)])
        return Verdict(bool(allowed), int(wait_ms))
