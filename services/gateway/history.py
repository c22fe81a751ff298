"""A match's states refolded from its records on `plylog.moves` (time travel, legal actions).

The rules worker's table is not reachable from here, and Redis holds only public views, so the
gateway refolds the match's own records with the shared fold (`services.common.moves_log.refold`,
the code the worker runs). States stay in this process (they may hold a Mastermind secret) and
only public views or the seat's own legal actions leave it.

Cost control, so that walking through old matches never stalls anyone else:
- reading starts at the match's create: its moves offset, from the projection's log (`offset` of
  seq 1); for projections written before log entries had offsets, the first offset whose broker
  time is at least `created_at` minus a margin. A finished match is read only up to its last
  accepted record; one in progress to the partition's end (the projection may be behind the
  log: a seat socket's client, with a result from the topic, asks next). The fold is checked
  against the projection's accepted event ids and redone from the partition's start if they
  differ (a record produced with an `at` far from its broker time);
- folds are cached (LRU) with the next offset to read, so a later call folds only new records,
  and a finished match's fold is never read again;
- reads run on a small pool of consumers in threads, so one long read holds one of them only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from kafka import KafkaConsumer, TopicPartition

from games.fold import Replayer
from games.match import MatchState
from games.timeutil import to_ms
from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth
from services.common.moves_log import Record, partition_of, refold
from services.common.projection import LogIndex

log = logging.getLogger("plylog.gateway.history")
START_MARGIN_MS = 10 * 60 * 1000
CACHE_SIZE = 256
READ_TIMEOUT_S = 20.0
READERS = 4


class HistoryUnavailable(RuntimeError):
    """The moves topic cannot be read (broker down, topic missing, a read too long)."""


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
    def current(self) -> MatchState | None:
        return self.states[-1] if self.states else None

    @property
    def finished(self) -> bool:
        return self.current is not None and self.current.status == "over"

    def at(self, seq: int) -> MatchState | None:
        return self.states[seq - 1] if 1 <= seq <= len(self.states) else None

    def feed(self, records: list[Record]) -> None:
        for _, taken in refold(
            records,
            topic=self.topic,
            partitions=self.partitions,
            match_id=self.match_id,
            replayers={self.partition: self.replayer},
        ):
            if taken is not None and taken.changed:
                self.states.append(taken.state)
                self.event_ids.append(taken.result["event_id"])
        if records:
            self.next_offset = records[-1].offset + 1


class MatchHistory:
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        index: Callable[[str], Awaitable[LogIndex]],
        read: Callable[[int], None] = lambda count: None,
        auth: KafkaAuth | None = None,
    ):
        self._note_read = read
        self._bootstrap = bootstrap
        self._auth = auth
        self._topic = topic
        self._index = index
        self._partitions: int | None = None
        self._readers: asyncio.Queue[KafkaConsumer] = asyncio.Queue()
        self._made = 0
        self._cache: OrderedDict[str, Folded] = OrderedDict()
        self._match_locks: dict[str, asyncio.Lock] = {}

    async def fold(self, match_id: str, created_at: str) -> Folded:
        """The match folded up to its last record now (cached, incremental)."""
        lock = self._match_locks.setdefault(match_id, asyncio.Lock())
        async with lock:
            folded = self._cache.get(match_id)
            if folded is None:
                folded = await self._fold_anew(match_id, created_at)
            elif not folded.finished:
                await self._read_into(folded, None)
            self._remember(folded)
            if len(self._match_locks) > 4 * CACHE_SIZE:
                self._match_locks = {k: v for k, v in self._match_locks.items() if v.locked()}
            return folded

    def close(self) -> None:
        while not self._readers.empty():
            self._readers.get_nowait().close()

    # --- internals -----------------------------------------------------------------------------------
    async def _fold_anew(self, match_id: str, created_at: str) -> Folded:
        index = await self._index(match_id)
        partitions = await self._partition_count()
        partition = partition_of(match_id.encode(), partitions)
        start = index.first_offset
        if start is None:
            start = await self._with_reader(
                self._offset_at, TopicPartition(self._topic, partition), max(0, to_ms(created_at) - START_MARGIN_MS)
            )
        folded = Folded(match_id, self._topic, partitions, partition, start)
        await self._read_into(folded, index.last_offset)
        if not folded.finished:  # the log may be ahead of the projection (a seat socket's early result)
            await self._read_into(folded, None)
        if not (folded.event_ids and folded.event_ids[: len(index.event_ids)] == index.event_ids):
            log.info(
                "history: %s refolded from the partition start (the fold from offset %d disagreed with the projection)",
                match_id,
                start,
            )
            folded = Folded(match_id, self._topic, partitions, partition, 0)
            await self._read_into(folded, None)
        return folded

    async def _read_into(self, folded: Folded, last_offset: int | None) -> None:
        """Feed the match's records from its next offset to `last_offset` (its last accepted
        record, when the match is over) or else to the partition's current end."""
        tp = TopicPartition(self._topic, folded.partition)
        records = await self._with_reader(self._read, tp, folded.next_offset, last_offset)
        self._note_read(len(records))
        folded.feed(records)

    def _remember(self, folded: Folded) -> None:
        self._cache[folded.match_id] = folded
        self._cache.move_to_end(folded.match_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    async def _partition_count(self) -> int:
        if self._partitions is None:
            self._partitions = await self._with_reader(self._count_partitions)
        return self._partitions

    async def _with_reader(self, work: Callable, *args):
        """Run `work(consumer, *args)` in a thread on one of the pool's consumers."""
        if self._readers.empty() and self._made < READERS:
            self._made += 1
            try:
                consumer = await asyncio.to_thread(self._new_consumer)
            except BaseException:
                self._made -= 1
                raise
        else:
            consumer = await self._readers.get()
        try:
            return await asyncio.to_thread(work, consumer, *args)
        except HistoryUnavailable:
            consumer.close()
            self._made -= 1
            consumer = None
            raise
        finally:
            if consumer is not None:
                self._readers.put_nowait(consumer)

    def _new_consumer(self) -> KafkaConsumer:
        try:
            return KafkaConsumer(
                bootstrap_servers=self._bootstrap,
                group_id=None,
                enable_auto_commit=False,
                fetch_max_bytes=32 * 1024 * 1024,
                request_timeout_ms=15000,
                **kafka_auth.kafka_python(self._auth),
            )
        except Exception as error:
            raise HistoryUnavailable(f"cannot reach the broker at {self._bootstrap}: {error}") from error

    def _count_partitions(self, consumer: KafkaConsumer) -> int:
        partitions = consumer.partitions_for_topic(self._topic)
        if not partitions:
            raise HistoryUnavailable(f"topic {self._topic} does not exist on {self._bootstrap}")
        return len(partitions)

    @staticmethod
    def _offset_at(consumer: KafkaConsumer, tp: TopicPartition, at_ms: int) -> int:
        found = consumer.offsets_for_times({tp: at_ms})
        return found[tp].offset if found.get(tp) is not None else 0

    def _read(self, consumer: KafkaConsumer, tp: TopicPartition, start: int, last: int | None) -> list[Record]:
        """Records of the partition from `start` through `last` (or to its current end)."""
        try:
            consumer.assign([tp])
            end = consumer.end_offsets([tp])[tp] if last is None else last + 1
            if start >= end:
                return []
            consumer.seek(tp, start)
            records: list[Record] = []
            deadline = time.monotonic() + READ_TIMEOUT_S
            while consumer.position(tp) < end:
                if time.monotonic() > deadline:
                    raise HistoryUnavailable(
                        f"reading {tp.topic}[{tp.partition}] from {start} to {end} took over {READ_TIMEOUT_S}s"
                    )
                for messages in consumer.poll(timeout_ms=1000, max_records=5000).values():
                    records.extend(Record(tp.partition, m.offset, m.key, m.value) for m in messages if m.offset < end)
            return records
        except HistoryUnavailable:
            raise
        except Exception as error:
            raise HistoryUnavailable(f"reading {tp.topic}[{tp.partition}]: {error}") from error
