"""The projection's Redis side: read what planning needs, apply a batch atomically with its
offsets (fenced: only if the stored offsets are what this worker expects), wipe, dump.

One Redis or a Redis Cluster (services.common.redis_client): a batch's script covers one
partition (one hash slot: its keys and its offsets key share the tag, see redis_keys), so it
runs on the node that holds that slot; the wipe, CLIENT LIST and the dump go to every node."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgpack
import redis

from services.common import redis_client
from services.common.redis_keys import OUTCOMES, Keys, Tag

from .plan import FINISHED_FIELDS, Command, Known, Needs, Standing, player_fields

# KEYS[1] = the offsets hash of the batch's partition (every key the commands name is in its
# slot). ARGV[1] = n; then n triples (field, expected next offset or "" for none stored, new next
# offset); then the commands as one MessagePack array: each command as argc, name, args...
# (one argument instead of thousands: redis-py's per-argument packing was a third of the
# projector's CPU). Nothing is written unless every stored offset is the expected one: a worker
# whose partitions moved on to another (a zombie after a rebalance) or whose projection was wiped
# writes nothing; and nothing either when an argument is neither a string nor a number.
APPLY_IF_OFFSETS_EXPECTED = """
local offsets = KEYS[1]
local n = tonumber(ARGV[1])
local i = 2
for _ = 1, n do
  local stored = redis.call('HGET', offsets, ARGV[i])
  if (stored or '') ~= ARGV[i + 1] then
    return {0, ARGV[i], stored or ''}
  end
  i = i + 3
end
local commands = cmsgpack.unpack(ARGV[2 + 3 * n])
local j, last = 1, #commands
while j <= last do
  local argc = commands[j]
  if type(argc) ~= 'number' or j + argc > last then
    return redis.error_reply('malformed command list at ' .. j)
  end
  for k = j + 1, j + argc do
    local kind = type(commands[k])
    if kind ~= 'string' and kind ~= 'number' then
      return redis.error_reply('argument ' .. (k - j) .. ' of ' .. tostring(commands[j + 1]) .. ' is a ' .. kind)
    end
  end
  j = j + argc + 1
end
j = 1
while j <= last do
  local argc = commands[j]
  redis.call(unpack(commands, j + 1, j + argc))
  j = j + argc + 1
end
i = 2
for _ = 1, n do
  redis.call('HSET', offsets, ARGV[i], ARGV[i + 2])
  i = i + 3
end
return {1}
"""

# ARGV[1] = glob of the prefix, ARGV[2..] = key prefixes to keep. Atomic, so no projector batch
# can land in a half-wiped projection.
WIPE = """
local doomed = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  local keep = false
  for i = 2, #ARGV do
    if string.sub(key, 1, #ARGV[i]) == ARGV[i] then keep = true break end
  end
  if not keep then doomed[#doomed + 1] = key end
end
for i = 1, #doomed, 1000 do
  redis.call('UNLINK', unpack(doomed, i, math.min(i + 999, #doomed)))
end
return #doomed
"""


@dataclass(frozen=True)
class Conflict:
    """The stored offset of `field` was not what the worker expected: nothing was written."""

    field: str
    stored: int | None


#: field ("topic:partition") -> (expected stored next offset or None, new next offset)
Advances = dict[str, tuple[int | None, int]]


def _conflict(answer: list) -> Conflict | None:
    """The script's answer: {1} applied, {0, field, stored} not."""
    if int(answer[0]) == 1:
        return None
    stored = answer[2].decode() if isinstance(answer[2], bytes) else answer[2]
    field = answer[1].decode() if isinstance(answer[1], bytes) else answer[1]
    return Conflict(field, int(stored) if stored else None)


def _conflict_or_error(answer: Any) -> Conflict | redis.RedisError | None:
    return answer if isinstance(answer, redis.RedisError) else _conflict(answer)


def offset_field(topic: str, partition: int) -> str:
    return f"{topic}:{partition}"


def client_name(role: str, prefix: str, instance: str = "") -> str:
    """Redis client name of a plylog process (CLIENT LIST shows who works on which prefix)."""
    return f"plylog-{role}[{_safe(prefix)}]{_safe(instance)}"


def _safe(text: str) -> str:
    return re.sub(r"[^!-~]", "_", text)  # client names take no spaces or control characters


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


class Store:
    def __init__(self, client: redis_client.SyncClient, keys: Keys, consumer: str, outcomes_topic: str):
        self.client = client
        self.keys = keys
        self.consumer = consumer
        self.outcomes_topic = outcomes_topic
        self._apply = client.register_script(APPLY_IF_OFFSETS_EXPECTED)
        self._wipe = client.register_script(WIPE)

    def tag_of(self, field: str) -> Tag:
        """The hash tag of a "topic:partition" offset field: the partition's, or {outcomes}."""
        topic, _, partition = field.rpartition(":")
        return OUTCOMES if topic == self.outcomes_topic else int(partition)

    def offsets_key(self, field: str) -> str:
        return self.keys.offsets(self.consumer, self.tag_of(field))

    def stored_offsets(self, fields: list[str]) -> dict[str, int | None]:
        if not fields:
            return {}
        pipe = self.client.pipeline(transaction=False)
        for name in fields:
            pipe.hget(self.offsets_key(name), name)
        return {f: None if v is None else int(v) for f, v in zip(fields, pipe.execute(), strict=False)}

    def all_stored_offsets(self) -> dict[str, int]:
        """Every stored offset of this consumer: {"topic:partition": next offset}."""
        return all_stored_offsets(self.client, self.keys, self.consumer)

    def read_known(self, needs: Needs) -> Known:
        matches, outcomes, standings = sorted(needs.matches), sorted(needs.outcomes), sorted(needs.standings)
        pipe = self.client.pipeline(transaction=False)
        for partition, match_id in matches:
            pipe.hget(self.keys.match(match_id, partition), "seq")
        for match_id in outcomes:
            pipe.exists(self.keys.match_outcome(match_id))
        for player, game in standings:
            pipe.hmget(self.keys.player(player), player_fields(game))
        answers = iter(pipe.execute() if matches or outcomes or standings else ())
        known = Known()
        for _, match_id in matches:
            seq = next(answers)
            if seq is not None:
                known.seqs[match_id] = int(seq)
        known.outcomes_applied = {m for m in outcomes if next(answers)}
        known.standings = {ps: Standing.from_values(next(answers)) for ps in standings}
        return known

    def finished(self, matches: list[tuple[str, int]], results_topic: str) -> list[tuple[int | None, list]]:
        """For each (match id, home partition): (the stored next offset of that results partition,
        HMGET of the match's FINISHED_FIELDS). Both keys are in the partition's slot and the offset is
        read first, so the fields are at least as new as the offset says (a finished match's never
        change again, and stored offsets only grow: what is read stays true)."""
        if not matches:
            return []
        pipe = self.client.pipeline(transaction=False)
        for match_id, partition in matches:
            field = offset_field(results_topic, partition)
            pipe.hget(self.offsets_key(field), field)
            pipe.hmget(self.keys.match(match_id, partition), list(FINISHED_FIELDS))
        answers = iter(pipe.execute())
        return [(None if (stored := next(answers)) is None else int(stored), next(answers)) for _ in matches]

    def apply(self, commands: list[Command], advances: Advances) -> Conflict | None:
        """Run `commands` and store the new offsets in one script, if the stored offsets are the
        expected ones. `advances` are all of one partition (one offsets key, one hash slot)."""
        key, args = self._script_call(commands, advances)
        return _conflict(self._apply(keys=[key], args=args))

    def apply_many(self, batches: list[tuple[list[Command], Advances]]) -> list[Conflict | redis.RedisError | None]:
        """`apply` of each (commands, advances), each of another partition, in one round trip (a
        pipeline of EVALSHA: redis-py's pipelined script call asks SCRIPT EXISTS first, a round
        trip more). Per batch: None when applied, its Conflict, or the error that stopped it
        (packing it, NOSCRIPT, data Redis refused): then `apply` it again on its own."""
        pipe = self.client.pipeline(transaction=False)
        errors: list[redis.RedisError | None] = []
        for commands, advances in batches:
            try:
                key, args = self._script_call(commands, advances)
            except redis.DataError as error:
                errors.append(error)
                continue
            pipe.evalsha(self._apply.sha, 1, key, *args)
            errors.append(None)
        answers = iter(pipe.execute(raise_on_error=False) if len(pipe) else ())
        return [error or _conflict_or_error(next(answers)) for error in errors]

    def _script_call(self, commands: list[Command], advances: Advances) -> tuple[str, list[Any]]:
        """The offsets key and the arguments of APPLY_IF_OFFSETS_EXPECTED; DataError when the
        commands hold what MessagePack cannot carry (the caller halves the batch)."""
        tags = {self.tag_of(name) for name in advances}
        if len(tags) != 1:
            raise ValueError(f"one script covers one partition; these advances name {sorted(map(str, tags))}")
        args: list[Any] = [len(advances)]
        for name, (expected, new) in advances.items():
            args += [name, "" if expected is None else expected, new]
        flat: list[Any] = []
        for command in commands:
            flat.append(len(command))
            flat.extend(command)
        try:
            args.append(msgpack.packb(flat, use_bin_type=False))  # Redis's cmsgpack knows no bin type
        except (TypeError, ValueError, OverflowError) as error:  # what Redis would refuse: the caller bisects
            raise redis.DataError(f"a command argument cannot be sent: {error}") from error
        return self.offsets_key(next(iter(advances))), args

    def wipe(self) -> int:
        """Delete every key of the projection (offsets included); returns how many. On one Redis in
        one atomic step. On a Redis Cluster node by node (no script may span slots): first every
        stored offset, so that a batch still in flight is fenced off (it finds no offset where it
        expects one and writes nothing), then the rest of the keys of every primary."""
        pattern = glob_escape(self.keys.prefix) + "*"
        if not redis_client.is_cluster(self.client):
            return int(self._wipe(keys=[], args=[pattern, *self.keys.not_projected]))
        deleted = 0
        for node in redis_client.nodes(self.client):
            deleted += _unlink(node, node.scan_iter(match=glob_escape(self.keys.prefix) + "offsets:*", count=1000))
        for node in redis_client.nodes(self.client):
            deleted += _unlink(
                node, (k for k in node.scan_iter(match=pattern, count=1000) if self.keys.projected(k.decode()))
            )
        return deleted

    def connected(self, role: str) -> list[str]:
        """Names of connected clients of `role` on this prefix and database (e.g. running projectors),
        on every node of a cluster."""
        db = redis_client.database(self.client)
        start = client_name(role, self.keys.prefix)
        names = set()
        for node in redis_client.nodes(self.client, primaries_only=False):
            names.update(
                c.get("name", "")
                for c in node.client_list()
                if c.get("name", "").startswith(start) and str(c.get("db")) == db
            )
        return sorted(names)


def _unlink(node: redis.Redis, names) -> int:
    """UNLINK keys one by one on a cluster node (keys of several slots cannot share a command)."""
    count, pipe = 0, node.pipeline(transaction=False)
    for name in names:
        pipe.unlink(name)
        count += 1
        if count % 1000 == 0:
            pipe.execute()
    pipe.execute()
    return count


def all_stored_offsets(client: redis_client.SyncClient, keys: Keys, consumer: str) -> dict[str, int]:
    """Every stored offset of `consumer`: {"topic:partition": next offset}, over the offsets keys of
    every partition and of plylog.outcomes."""
    pipe = client.pipeline(transaction=False)
    for name in keys.all_offsets(consumer):
        pipe.hgetall(name)
    return {k.decode(): int(v) for stored in pipe.execute() for k, v in stored.items()}


def dump(client: redis.Redis, keys: Keys) -> dict[str, Any]:
    """Canonical content of the projection: {key without the prefix: [type, value]}, keys sorted;
    hashes as sorted dicts, sorted sets as [member, score] sorted by score then member, sets
    sorted. Two projections are the same when their dumps are equal, whatever their prefixes."""
    names = sorted(
        k.decode()
        for k in client.scan_iter(match=glob_escape(keys.prefix) + "*", count=1000)
        if keys.projected(k.decode())
    )
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.type(name)
    types = [t.decode() for t in pipe.execute()] if names else []
    pipe = client.pipeline(transaction=False)
    readers = {
        "string": pipe.get,
        "hash": pipe.hgetall,
        "set": pipe.smembers,
        "list": lambda k: pipe.lrange(k, 0, -1),
        "zset": lambda k: pipe.zrange(k, 0, -1, withscores=True),
    }
    for name, kind in zip(names, types, strict=False):
        readers[kind](name)
    values = pipe.execute() if names else []
    cut = len(keys.prefix)
    return {
        name[cut:]: [kind, _canonical(kind, value)] for name, kind, value in zip(names, types, values, strict=False)
    }


def _canonical(kind: str, value: Any) -> Any:
    text = _text
    if kind == "string":
        return text(value)
    if kind == "hash":
        return {text(k): text(v) for k, v in sorted(value.items())}
    if kind == "set":
        return sorted(text(m) for m in value)
    if kind == "list":
        return [text(m) for m in value]
    return sorted(([text(m), s] for m, s in value), key=lambda ms: (ms[1], ms[0]))


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "backslashreplace")


def without_offsets(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A dump without the consumer offsets (to compare runs over topics of different lengths)."""
    return {k: v for k, v in snapshot.items() if not k.startswith("offsets:")}
