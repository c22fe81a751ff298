"""A match's states refolded from its partition of `plylog.moves` (time travel, legal actions).

The rules worker's table is not reachable from here, and Redis holds only public views, so the
gateway refolds the match's own records with the shared fold (`services.common.moves_log.refold`,
the code the worker runs). States stay in this process (they may hold a Mastermind secret) and
only public views or the seat's own legal actions leave it.

Cost control:
- reading starts near the match's creation: the first offset whose broker timestamp is at least
  `created_at` minus a margin (`offsets_for_times`); the fold is then checked against the
  projection's accepted event ids, and redone from the partition's start if they differ
  (a record produced with an `at` far from its broker time);
- folds are cached (LRU) with the next offset to read, so a later call folds only new records.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Optional

from kafka import KafkaConsumer, TopicPartition

from games.fold import Replayer
from games.match import MatchState
from games.timeutil import to_ms
from services.common.moves_log import Record, partition_of, refold

log = logging.getLogger("plylog.gateway.history")
START_MARGIN_MS = 10 * 60 * 1000
CACHE_SIZE = 256
READ_TIMEOUT_S = 20.0


class HistoryUnavailable(RuntimeError):
    """The moves topic cannot be read (broker down, topic missing)."""


@dataclass
class Folded:
    """A match folded so far: its state after each accepted record (index seq-1)."""

    match_id: str
    topic: str
    partitions: int
    partition: int
    next_offset: int
    replayer: Replayer = field(default_factory=Replayer)
    states: list[MatchState] = field(default_factory=list)
    event_ids: list[str] = field(default_factory=list)  # of the accepted records, index seq-1

    @property
    def current(self) -> Optional[MatchState]:
        return self.states[-1] if self.states else None

    def at(self, seq: int) -> Optional[MatchState]:
        return self.states[seq - 1] if 1 <= seq <= len(self.states) else None

    def feed(self, records: list[Record]) -> None:
        for _, taken in refold(records, topic=self.topic, partitions=self.partitions, match_id=self.match_id,
                               replayers={self.partition: self.replayer}):
            if taken is not None and taken.changed:
                self.states.append(taken.state)
                self.event_ids.append(taken.result["event_id"])
        if records:
            self.next_offset = records[-1].offset + 1


class MatchHistory:
    def __init__(self, bootstrap: str, topic: str, accepted_ids: Callable[[str], Awaitable[list[str]]]):
        self._bootstrap = bootstrap
        self._topic = topic
        self._accepted_ids = accepted_ids
        self._consumer: Optional[KafkaConsumer] = None
        self._partitions: Optional[int] = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Folded] = OrderedDict()
        self._match_locks: dict[str, asyncio.Lock] = {}

    async def fold(self, match_id: str, created_at: str) -> Folded:
        """The match folded up to the end of its partition now (cached, incremental)."""
        lock = self._match_locks.setdefault(match_id, asyncio.Lock())
        async with lock:
            folded = self._cache.get(match_id)
            if folded is None:
                folded = await asyncio.to_thread(self._fold_from_creation, match_id, created_at)
                if not await self._agrees_with_projection(folded):
                    log.info("history: %s refolded from the partition start (the fold from its creation time "
                             "disagreed with the projection)", match_id)
                    folded = Folded(match_id, self._topic, self._partitions, folded.partition, 0)
                    await asyncio.to_thread(self._continue, folded)
            else:
                await asyncio.to_thread(self._continue, folded)
            self._remember(folded)
            if len(self._match_locks) > 4 * CACHE_SIZE:
                self._match_locks = {k: v for k, v in self._match_locks.items() if v.locked()}
            return folded

    def close(self) -> None:
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None

    # --- internals -----------------------------------------------------------------------------------
    def _remember(self, folded: Folded) -> None:
        self._cache[folded.match_id] = folded
        self._cache.move_to_end(folded.match_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    async def _agrees_with_projection(self, folded: Folded) -> bool:
        ids = await self._accepted_ids(folded.match_id)
        return bool(folded.event_ids) and folded.event_ids[:len(ids)] == ids

    def _open(self) -> KafkaConsumer:
        if self._consumer is None:
            try:
                self._consumer = KafkaConsumer(bootstrap_servers=self._bootstrap, group_id=None,
                                               enable_auto_commit=False, fetch_max_bytes=32 * 1024 * 1024,
                                               request_timeout_ms=15000)
                partitions = self._consumer.partitions_for_topic(self._topic)
            except Exception as error:  # noqa: BLE001
                self._consumer = None
                raise HistoryUnavailable(f"cannot reach the broker at {self._bootstrap}: {error}") from error
            if not partitions:
                raise HistoryUnavailable(f"topic {self._topic} does not exist on {self._bootstrap}")
            self._partitions = len(partitions)
        return self._consumer

    def _fold_from_creation(self, match_id: str, created_at: str) -> Folded:
        with self._lock:
            consumer = self._open()
            tp = TopicPartition(self._topic, partition_of(match_id.encode(), self._partitions))
            found = consumer.offsets_for_times({tp: max(0, to_ms(created_at) - START_MARGIN_MS)})
            start = found[tp].offset if found.get(tp) is not None else 0
            folded = Folded(match_id, self._topic, self._partitions, tp.partition, start)
            folded.feed(self._read(consumer, tp, start))
            return folded

    def _continue(self, folded: Folded) -> None:
        with self._lock:
            consumer = self._open()
            tp = TopicPartition(self._topic, folded.partition)
            folded.feed(self._read(consumer, tp, folded.next_offset))

    def _read(self, consumer: KafkaConsumer, tp: TopicPartition, start: int) -> list[Record]:
        """Records of the partition from `start` to its current end."""
        try:
            consumer.assign([tp])
            end = consumer.end_offsets([tp])[tp]
            if start >= end:
                return []
            consumer.seek(tp, start)
            records: list[Record] = []
            deadline = time.monotonic() + READ_TIMEOUT_S
            while consumer.position(tp) < end:
                if time.monotonic() > deadline:
                    raise HistoryUnavailable(f"reading {tp.topic}[{tp.partition}] from {start} to {end} "
                                             f"took over {READ_TIMEOUT_S}s")
                for messages in consumer.poll(timeout_ms=1000, max_records=5000).values():
                    records.extend(Record(tp.partition, m.offset, m.key, m.value) for m in messages)
            return records
        except HistoryUnavailable:
            raise
        except Exception as error:  # noqa: BLE001 - broker trouble: say so, keep serving the rest
            consumer.close()
            self._consumer = None
            raise HistoryUnavailable(f"reading {tp.topic}[{tp.partition}]: {error}") from error
