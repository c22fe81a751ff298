"""The notifier: reads plylog.results and plylog.outcomes, puts each notification a player asked for
into the outbox (one delivery per endpoint), and delivers what is due, each endpoint bounded in
concurrency and queue, so a dead endpoint or mail server holds up nothing but its own deliveries
(docs/notifications.md). It is off the match path: nothing waits for it.

A player's own endpoint carries no address in Redis: the notifier opens it from the player's sealed
profile (services/common/profile_tables.py) when it sends, and keeps it nowhere. An address that no
longer opens (the player was erased) is never sent to: the delivery ends as a dead letter that names
the endpoint id only."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from services.common.kafka_assigned import AssignedReader
from services.common.notify_store import PLATFORM, TARGET_FIELD, Registry
from services.common.profile_tables import ProfileTables
from services.common.settings import Topics, env_number

from . import rules
from .channels import Channels
from .outbox import Delivery, Outbox

log = logging.getLogger("plylog.notifier")
READY_SCAN = 1000  # endpoints with something due looked at per round


@dataclass(frozen=True)
class NotifierConfig:
    """Settings (environment variables PLYLOG_NOTIFY_*; docs/notifications.md, "Settings")."""

    per_endpoint: int = 2  # deliveries to one endpoint at once
    concurrency: int = 32  # deliveries at once, all endpoints
    max_pending: int = 1000  # deliveries waiting per endpoint; more become dead letters (queue_full)
    max_attempts: int = 8
    backoff_base_s: float = 5.0
    backoff_cap_s: float = 1800.0
    lease_s: float = 60.0  # a claimed delivery is due again after this (a crashed notifier's)
    retention_s: int = 86400  # how long a finished delivery's entry (its id and state) is kept
    # Records per outbox script: Redis runs a script alone, so a big batch's script would hold the
    # projector's scripts (the views' path) behind it.
    batch: int = 50
    # The process's CPU priority: it is off the match path, so under load the rules worker, the
    # projector and the gateway go first and notifications wait (as the bots' thinking does).
    niceness: int = 10

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> NotifierConfig:
        env = os.environ if env is None else env
        return cls(
            per_endpoint=env_number(env, "PLYLOG_NOTIFY_PER_ENDPOINT", cls.per_endpoint, lo=1, hi=64),
            concurrency=env_number(env, "PLYLOG_NOTIFY_CONCURRENCY", cls.concurrency, lo=1, hi=1024),
            max_pending=env_number(env, "PLYLOG_NOTIFY_MAX_PENDING", cls.max_pending, lo=1, hi=1_000_000),
            max_attempts=env_number(env, "PLYLOG_NOTIFY_MAX_ATTEMPTS", cls.max_attempts, lo=1, hi=50),
            backoff_base_s=env_number(env, "PLYLOG_NOTIFY_BACKOFF_S", cls.backoff_base_s, lo=0.01, hi=3600.0),
            backoff_cap_s=env_number(env, "PLYLOG_NOTIFY_BACKOFF_CAP_S", cls.backoff_cap_s, lo=0.01, hi=86400.0),
            lease_s=env_number(env, "PLYLOG_NOTIFY_LEASE_S", cls.lease_s, lo=1.0, hi=3600.0),
            retention_s=env_number(env, "PLYLOG_NOTIFY_RETENTION_S", cls.retention_s, lo=3600, hi=90 * 86400),
            niceness=env_number(env, "PLYLOG_NOTIFY_NICENESS", cls.niceness, lo=0, hi=19),
        )


def _now_ms() -> int:
    return int(time.time() * 1000)


class Notifier:
    def __init__(
        self,
        reader: AssignedReader,
        outbox: Outbox,
        registry: Registry,
        channels: Channels,
        topics: Topics,
        config: NotifierConfig,
        contacts: ProfileTables,
    ):
        self.reader, self.outbox, self.registry, self.channels = reader, outbox, registry, channels
        self.topics, self.config, self.contacts = topics, config, contacts
        self.counts: Counter[str] = Counter()
        self._inflight: dict[str, asyncio.Task[None]] = {}
        self._per_endpoint: Counter[str] = Counter()

    async def run(self, stop: asyncio.Event, on_ready: Callable[[], None] = lambda: None) -> None:
        starts = await self.reader.start([self.topics.results, self.topics.outcomes], await self.outbox.offsets())
        # Every partition's start is kept at once, not with its first record: a partition read from its
        # end (no offset yet) is read from there after a crash, not from its end then (losing what came).
        await self.outbox.enqueue([], starts, {}, _now_ms())
        released = await self.outbox.release(_now_ms())
        log.info("reading %d partitions; %d deliveries a previous run held are due again", len(starts), released)
        on_ready()
        tasks = [asyncio.create_task(self._consume(stop)), asyncio.create_task(self._deliver(stop))]
        stopping = asyncio.create_task(stop.wait())
        try:
            # a loop that fails (Redis away) ends the process: a restart resumes from the offsets in Redis
            await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                error = task.exception() if task.done() else None
                if error is not None:
                    raise error
        finally:
            stopping.cancel()
            for task in tasks:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)
            if self._inflight:  # let what is on its way finish, so a stop repeats nothing
                await asyncio.wait(list(self._inflight.values()), timeout=10)
            await self.reader.stop()

    # --- from the topics into the outbox ---------------------------------------------------------------
    async def _consume(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            records = await self.reader.take(self.config.batch, 0.5)
            if records:
                await self._enqueue(records)

    async def _enqueue(self, records: list[tuple[str, int, int, bytes | None]]) -> None:
        found: list[rules.Notification] = []
        offsets: dict[tuple[str, int], int] = {}
        seqs: dict[str, int] = {}
        for topic, partition, offset, value in records:
            offsets[(topic, partition)] = offset + 1
            try:
                record = orjson.loads(value) if value else None
            except orjson.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                self.counts["unreadable"] += 1
                continue
            if topic == self.topics.outcomes:
                found += rules.from_outcome(record)
            else:
                found += rules.from_result(record)
                match_id, seq = record.get("match_id"), record.get("seq")
                if record.get("status") == "accepted" and isinstance(match_id, str) and isinstance(seq, int):
                    seqs[match_id] = max(seq, seqs.get(match_id, -1))
        deliveries = await self._deliveries(found)
        added, full = await self.outbox.enqueue(deliveries, offsets, seqs, _now_ms())
        self.counts["enqueued"] += added
        self.counts["queue_full"] += full

    async def _deliveries(self, found: list[rules.Notification]) -> list[Delivery]:
        if not found:
            return []
        players = sorted({n.player for n in found})
        endpoints, wanted = await self.registry.lookup([PLATFORM, *players], players)
        platform = endpoints[PLATFORM]
        deliveries = []
        for n in found:
            payload = orjson.dumps(n.payload())
            mine = [
                (n.player, e)
                for e in endpoints[n.player]
                if n.kind in wanted[n.player]["kinds"] and e["channel"] in wanted[n.player]["channels"]
            ]
            for owner, endpoint in [*mine, *((PLATFORM, e) for e in platform)]:
                deliveries.append(
                    Delivery(
                        rules.delivery_id(n.id, endpoint["id"]),
                        owner,
                        endpoint["id"],
                        endpoint["channel"],
                        n.kind,
                        n.id,
                        n.match_id,
                        n.seq,
                        n.due_ms,
                        payload,
                    )
                )
        return deliveries

    # --- from the outbox to the endpoints ---------------------------------------------------------------
    async def _deliver(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = 0
            free = self.config.concurrency - len(self._inflight)
            if free > 0:
                started = await self._start_due(free)
            if not started:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.2)

    async def _start_due(self, free: int) -> int:
        """Start up to `free` due deliveries, walking the endpoints (at most `per_endpoint` each), so
        a dead endpoint's queue never stands before another endpoint's deliveries."""
        started = 0
        for endpoint in await self.outbox.ready_endpoints(_now_ms(), READY_SCAN):
            room = min(free - started, self.config.per_endpoint - self._per_endpoint[endpoint])
            if room <= 0:
                continue
            for delivery in await self.outbox.due(endpoint, _now_ms(), room + self._per_endpoint[endpoint]):
                if delivery in self._inflight or room <= 0:
                    continue
                fields = await self.outbox.claim(delivery, _now_ms(), int(self.config.lease_s * 1000))
                if fields is None:
                    continue
                fields["id"] = delivery
                self._per_endpoint[endpoint] += 1
                self._inflight[delivery] = asyncio.create_task(self._send(fields))
                started, room = started + 1, room - 1
            if started >= free:
                break
        return started

    async def _send(self, delivery: dict[str, str]) -> None:
        try:
            await self._send_one(delivery)
        except Exception:  # Redis away, or a bug: the lease makes the delivery due again
            log.exception("delivery %s failed; it is retried when its lease ends", delivery["id"])
        finally:
            self._per_endpoint[delivery["endpoint"]] -= 1
            self._inflight.pop(delivery["id"], None)

    async def _send_one(self, delivery: dict[str, str]) -> None:
        did, attempts = delivery["id"], int(delivery["attempts"])
        if delivery["kind"] == "clock_low" and int(delivery["latest_seq"]) > int(delivery["seq"]):
            await self._end(did, "dropped", "superseded: the match moved on")
            return
        endpoint: dict[str, Any] | None = await self.registry.endpoint(delivery["owner"], delivery["endpoint"])
        if endpoint is None:
            await self._end(did, "dropped", "the endpoint was removed")
            return
        field = TARGET_FIELD[endpoint["channel"]]
        if field not in endpoint:  # a player's own: the address is in their sealed profile
            contact = self.contacts.contact(delivery["owner"], endpoint["id"])
            if contact.erased:  # fail closed: never sent, and the dead letter holds no address
                await self._end(did, "dead", "erased: the player's address no longer opens")
                return
            if contact.target is None:  # the profile not read yet here, or written after the endpoint
                await self._retry(did, attempts, "the address is not in the player's profile (yet)")
                return
            endpoint = {**endpoint, field: contact.target}
        sent = await self.channels.send(endpoint, delivery)
        if sent.ok:
            await self._end(did, "sent")
        elif sent.permanent:
            await self._end(did, "dead", sent.reason)
            log.warning("dead letter %s to %s: %s", did, delivery["endpoint"], sent.reason)
        else:
            await self._retry(did, attempts, sent.reason)

    async def _retry(self, did: str, attempts: int, reason: str) -> None:
        """Again after a backoff, or a dead letter after the last attempt."""
        if attempts >= self.config.max_attempts:
            why = f"{reason} (after {attempts} attempts)"
            await self._end(did, "dead", why)
            log.warning("dead letter %s: %s", did, why)
            return
        wait = rules.backoff_s(attempts, did, self.config.backoff_base_s, self.config.backoff_cap_s)
        self.counts["retried"] += 1
        await self.outbox.finish(did, "retry", _now_ms(), reason, _now_ms() + int(wait * 1000))

    async def _end(self, delivery: str, how: str, reason: str = "") -> None:
        self.counts[how] += 1
        await self.outbox.finish(delivery, how, _now_ms(), reason)
