"""The notifier's outbox in Redis: one entry per delivery (a notification to one endpoint), written
in the same script as the topic offsets that cover it, so a crash can neither lose a delivery nor
make one twice (docs/decisions/notifier-exactly-once.md). Every key carries the tag {notify}.

key (P = <p>notify:{notify}:)   type    content
------------------------------  ------  ---------------------------------------------------------------
P d:<delivery id>               hash    state (pending|sent|dead|dropped), owner, endpoint, channel, kind,
                                        notification, match_id, seq, payload (JSON), attempts, error,
                                        created_ms, claimed; once it ends, its payload goes and the rest
                                        expires `retention_s` later; none for a `queue_full` one
P due:<endpoint id>             zset    the endpoint's pending deliveries by the epoch ms they are due (a
                                        claimed one: when its lease ends, so a crash retries it then)
P ready                         zset    endpoint id -> its earliest due delivery: the sender walks the
                                        endpoints, so a busy (dead) endpoint's queue holds up no other
P pending                       hash    endpoint id -> its pending deliveries (the queue bound)
P dead:<owner>                  list    the owner's latest dead letters (JSON), newest first, at most 200
P offsets                       hash    "<topic>:<partition>" -> the next offset to read
P seq:<match id>                string  the match's latest seq seen (a reminder of an earlier one is dropped)
P rem:<match id>                hash    endpoint id -> "<delivery id>|<seq>" of the reminder (clock_low)
                                        waiting; a later seq of the match drops it, so one waits at most
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from services.common.notify_store import keys_prefix
from services.common.redis_client import AsyncClient

DEAD_LETTERS_KEPT = 200

_PRELUDE = """
local p = ARGV[1]
local function requeue(ep)  -- the endpoint's earliest due delivery decides its place in `ready`
  local head = redis.call('ZRANGE', p .. 'due:' .. ep, 0, 0, 'WITHSCORES')
  if head[2] then redis.call('ZADD', p .. 'ready', head[2], ep) else redis.call('ZREM', p .. 'ready', ep) end
end
"""

_ENQUEUE = (
    _PRELUDE
    + """
local now, most, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local batch = cjson.decode(ARGV[5])
local added, full = 0, 0
local function drop(id, reason)
  local key = p .. 'd:' .. id
  if redis.call('HGET', key, 'state') ~= 'pending' then return end
  local ep = redis.call('HGET', key, 'endpoint')
  redis.call('HSET', key, 'state', 'dropped', 'error', reason, 'ended_ms', now)
  redis.call('HDEL', key, 'payload')
  redis.call('ZREM', p .. 'due:' .. ep, id)
  requeue(ep)
  redis.call('HINCRBY', p .. 'pending', ep, -1)
  redis.call('EXPIRE', key, ttl)
end
for _, d in ipairs(batch.deliveries) do
  local key = p .. 'd:' .. d.id
  if redis.call('EXISTS', key) == 0 then
    local fields = {'owner', d.owner, 'endpoint', d.endpoint, 'channel', d.channel, 'kind', d.kind,
      'notification', d.notification, 'match_id', d.match_id, 'seq', d.seq, 'payload', d.payload,
      'attempts', 0, 'created_ms', now}
    if tonumber(redis.call('HGET', p .. 'pending', d.endpoint) or '0') >= most then
      local reason = 'queue_full: the endpoint has ' .. most .. ' deliveries waiting'
      -- no entry kept: the offsets move with this script, so the record is not read again
      redis.call('LPUSH', p .. 'dead:' .. d.owner, cjson.encode({delivery = d.id, notification = d.notification,
        kind = d.kind, endpoint = d.endpoint, channel = d.channel, match_id = d.match_id, attempts = 0,
        reason = reason, at_ms = now}))
      redis.call('LTRIM', p .. 'dead:' .. d.owner, 0, KEPT - 1)
      full = full + 1
    else
      redis.call('HSET', key, 'state', 'pending', unpack(fields))
      redis.call('ZADD', p .. 'due:' .. d.endpoint, d.due, d.id)
      redis.call('ZADD', p .. 'ready', 'LT', d.due, d.endpoint)
      redis.call('HINCRBY', p .. 'pending', d.endpoint, 1)
      added = added + 1
      if d.kind == 'clock_low' then  -- one reminder per match and endpoint waits: the latest turn's
        local rem = p .. 'rem:' .. d.match_id
        local prev = redis.call('HGET', rem, d.endpoint)
        if prev then drop(string.match(prev, '^[^|]+'), 'superseded: the match moved on') end
        redis.call('HSET', rem, d.endpoint, d.id .. '|' .. d.seq)
        redis.call('EXPIRE', rem, ttl)
      end
    end
  end
end
for k, v in pairs(batch.offsets) do redis.call('HSET', p .. 'offsets', k, v) end
for m, s in pairs(batch.seqs) do
  local k = p .. 'seq:' .. m
  if s > tonumber(redis.call('GET', k) or '-1') then redis.call('SET', k, s, 'EX', ttl) end
  local rem = redis.call('HGETALL', p .. 'rem:' .. m)
  for i = 1, #rem, 2 do
    local id, seq = string.match(rem[i + 1], '^([^|]+)|(.+)$')
    if tonumber(seq) < s then
      drop(id, 'superseded: the match moved on')
      redis.call('HDEL', p .. 'rem:' .. m, rem[i])
    end
  end
end
return {added, full}
""".replace("KEPT", str(DEAD_LETTERS_KEPT))
)

_CLAIM = (
    _PRELUDE
    + """
local id, now, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local key = p .. 'd:' .. id
local ep = redis.call('HGET', key, 'endpoint')
if not ep or redis.call('HGET', key, 'state') ~= 'pending' then return false end
local due = redis.call('ZSCORE', p .. 'due:' .. ep, id)
if not due or tonumber(due) > now then return false end
redis.call('ZADD', p .. 'due:' .. ep, now + lease, id)
requeue(ep)
redis.call('HINCRBY', key, 'attempts', 1)
redis.call('HSET', key, 'claimed', 1)
local seq = redis.call('GET', p .. 'seq:' .. redis.call('HGET', key, 'match_id'))
local fields = redis.call('HGETALL', key)
table.insert(fields, 'latest_seq')
table.insert(fields, seq or '-1')
return fields
"""
)

_FINISH = (
    _PRELUDE
    + """
local id, how, now, ttl, reason, retry_at = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]),
  ARGV[6], tonumber(ARGV[7])
local key = p .. 'd:' .. id
if redis.call('HGET', key, 'state') ~= 'pending' then return 0 end
local d = redis.call('HMGET', key, 'owner', 'endpoint', 'channel', 'kind', 'notification', 'match_id', 'attempts')
if how == 'retry' then
  redis.call('HSET', key, 'error', reason, 'claimed', 0)
  redis.call('ZADD', p .. 'due:' .. d[2], retry_at, id)
  requeue(d[2])
  return 1
end
redis.call('HSET', key, 'state', how, 'error', reason, 'claimed', 0, 'ended_ms', now)
redis.call('HDEL', key, 'payload')  -- what is kept of an ended delivery is small
redis.call('ZREM', p .. 'due:' .. d[2], id)
requeue(d[2])
redis.call('HINCRBY', p .. 'pending', d[2], -1)
redis.call('EXPIRE', key, ttl)
if how == 'dead' then
  redis.call('LPUSH', p .. 'dead:' .. d[1], cjson.encode({delivery = id, notification = d[5], kind = d[4],
    endpoint = d[2], channel = d[3], match_id = d[6], attempts = tonumber(d[7]), reason = reason, at_ms = now}))
  redis.call('LTRIM', p .. 'dead:' .. d[1], 0, KEPT - 1)
end
return 1
""".replace("KEPT", str(DEAD_LETTERS_KEPT))
)

_RELEASE = (
    _PRELUDE
    + """
local now = tonumber(ARGV[2])
local n = 0
for _, ep in ipairs(redis.call('ZRANGE', p .. 'ready', 0, -1)) do
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. 'due:' .. ep, '(' .. now, '+inf')) do
    if redis.call('HGET', p .. 'd:' .. id, 'claimed') == '1' then
      redis.call('ZADD', p .. 'due:' .. ep, now, id)
      n = n + 1
    end
  end
  requeue(ep)
end
return n
"""
)


@dataclass(frozen=True)
class Delivery:
    id: str
    owner: str
    endpoint: str
    channel: str
    kind: str
    notification: str
    match_id: str
    seq: int
    due: int
    payload: bytes


class Outbox:
    def __init__(self, client: AsyncClient, prefix: str, *, max_pending: int, retention_s: int):
        self.client, self.p = client, keys_prefix(prefix)
        self.max_pending, self.retention_s = max_pending, retention_s
        self._ready = self.p + "ready"

    async def offsets(self) -> dict[tuple[str, int], int]:
        found = await self.client.hgetall(self.p + "offsets")
        parsed = {}
        for field, value in found.items():
            topic, _, partition = (field.decode() if isinstance(field, bytes) else field).rpartition(":")
            parsed[(topic, int(partition))] = int(value)
        return parsed

    async def enqueue(
        self, deliveries: list[Delivery], offsets: dict[tuple[str, int], int], seqs: dict[str, int], now_ms: int
    ) -> tuple[int, int]:
        """Add the deliveries not there yet and move the offsets, in one script. (added, refused as
        queue_full: those become dead letters at once)."""
        batch = {
            "deliveries": [{**d.__dict__, "payload": d.payload.decode()} for d in deliveries],
            "offsets": {f"{t}:{p}": o for (t, p), o in offsets.items()},
            "seqs": seqs,
        }
        added, full = await self.client.eval(
            _ENQUEUE, 1, self._ready, self.p, now_ms, self.max_pending, self.retention_s, orjson.dumps(batch)
        )
        return int(added), int(full)

    async def ready_endpoints(self, now_ms: int, most: int) -> list[str]:
        """Endpoints with a delivery due, the longest waiting first."""
        found = await self.client.zrangebyscore(self._ready, "-inf", now_ms, start=0, num=most)
        return [i.decode() if isinstance(i, bytes) else str(i) for i in found]

    async def due(self, endpoint: str, now_ms: int, most: int) -> list[str]:
        """The endpoint's deliveries due by `now_ms`, the earliest first."""
        found = await self.client.zrangebyscore(f"{self.p}due:{endpoint}", "-inf", now_ms, start=0, num=most)
        return [i.decode() if isinstance(i, bytes) else str(i) for i in found]

    async def claim(self, delivery: str, now_ms: int, lease_ms: int) -> dict[str, str] | None:
        """The delivery's fields once this process holds it (its lease), or None: not pending or not due."""
        found = await self.client.eval(_CLAIM, 1, self._ready, self.p, delivery, now_ms, lease_ms)
        if not found:
            return None
        text = [x.decode() if isinstance(x, bytes) else str(x) for x in found]
        return dict(zip(text[::2], text[1::2], strict=True))

    async def finish(self, delivery: str, how: str, now_ms: int, reason: str = "", retry_at_ms: int = 0) -> None:
        """how: sent | dead | dropped (an end), or retry at `retry_at_ms`."""
        await self.client.eval(
            _FINISH, 1, self._ready, self.p, delivery, how, now_ms, self.retention_s, reason[:500], retry_at_ms
        )

    async def release(self, now_ms: int) -> int:
        """At start: the deliveries a previous run held (claimed, lease not over) are due now."""
        return int(await self.client.eval(_RELEASE, 1, self._ready, self.p, now_ms))

    async def state(self, delivery: str) -> dict[str, str]:
        found = await self.client.hgetall(self.p + f"d:{delivery}")
        return {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in found.items()
        }
