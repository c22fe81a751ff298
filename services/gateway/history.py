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
  against the projection's first and last accepted event ids and redone from the partition's
  start if they differ (a record produced with an `at` far from its broker time);
- one call reads and folds for at most `budget_s` of CPU (PLYLOG_WORK_BUDGET_MS): a match whose
  records take longer (thousands of moves, or a busy partition between its first and last) is
  folded over several calls, each going on where the last stopped; until it is done a call
  raises FoldPending (the gateway answers 503 with Retry-After), so no request pays for more;
- folds are cached (LRU) with the next offset to read, so a later call folds only new records,
  and a finished match's fold is never read again;
- reads run on a small pool of readers (kafka_read.PartitionReader) in threads, so one long read
  holds one of them only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from games.fold import Replayer
from games.match import MatchState
from games.timeutil import to_ms
from services.common.kafka_auth import KafkaAuth
from services.common.kafka_partition import partition_of
from services.common.kafka_read import PartitionReader, Record
from services.common.moves_log import refold
from services.common.projection import LogIndex

log = logging.getLogger("plylog.gateway.history")
T = TypeVar("T")
START_MARGIN_MS = 10 * 60 * 1000
CACHE_SIZE = 256
READ_TIMEOUT_S = 20.0
READERS = 4
POLL_RECORDS = 100  # records taken from the reader between two looks at the budget


class HistoryUnavailable(RuntimeError):
    """The moves topic cannot be read (broker down, topic missing, a read too long)."""


class FoldPending(Exception):
    """The call's work budget ran out before the match was folded; the next call goes on."""

    def __init__(self, match_id: str, folded_records: int):
        super().__init__(f"{match_id}: {folded_records} records folded so far")
        self.match_id, self.folded_records = match_id, folded_records


@dataclass
class Folded:
    """A match folded so far: its state after each accepted record (index seq-1).

    `stage` is how far the fold has got: "to_last" (reading to the last record the projection
    knows), "to_end" (to the partition's end), "check" (to compare with the projection), "ready";
    `index` is the projection's log index it is checked against (None once refolded from the
    partition's start, which is not checked again)."""

    match_id: str
    topic: str
    partitions: int
    partition: int
    next_offset: int
    index: LogIndex | None = None
    stage: str = "to_last"
    replayer: Replayer = field(default_factory=Replayer)
    states: list[MatchState] = field(default_factory=list)
    event_ids: list[str] = field(default_factory=list)  # of the accepted records, index seq-1
    records: int = 0  # of the match, folded

    @property
    def current(self) -> MatchState | None:
        return self.states[-1] if self.states else None

    @property
    def finished(self) -> bool:
        return self.current is not None and self.current.status == "over"

    @property
    def complete(self) -> bool:
        """Folded to its end: a finished match is never read again."""
        return self.stage == "ready" and self.finished

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
            self.records += 1
            if taken is not None and taken.changed and taken.state is not None:
                self.states.append(taken.state)
                self.event_ids.append(taken.result["event_id"])
        if records:
            self.next_offset = records[-1].offset + 1

    def restart(self) -> None:
        """Fold again from the partition's start, to its end, unchecked."""
        self.next_offset, self.index, self.stage, self.records = 0, None, "to_end", 0
        self.replayer, self.states, self.event_ids = Replayer(), [], []

    def agrees(self) -> bool:
        """The fold has the projection's first and last accepted records at their seqs."""
        index, ids = self.index, self.event_ids
        if index is None or not ids:
            return False
        return all(
            entry is None or (entry[0] <= len(ids) and ids[entry[0] - 1] == entry[1])
            for entry in (index.first, index.last)
        )


class MatchHistory:
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        index: Callable[[str], Awaitable[LogIndex]],
        read: Callable[[int], None] = lambda count: None,
        budget_s: float = 0.03,
        auth: KafkaAuth | None = None,
    ):
        self._note_read = read
        self._bootstrap = bootstrap
        self._auth = auth
        self._topic = topic
        self._index = index
        self._budget_s = budget_s
        self._partitions: int | None = None
        self._readers: asyncio.Queue[PartitionReader] = asyncio.Queue()
        self._made = 0
        self._cache: OrderedDict[str, Folded] = OrderedDict()
        self._match_locks: dict[str, asyncio.Lock] = {}

    def folded_through(self, match_id: str) -> bool:
        """Whether the match's fold is cached through its log's end as last read (a call then reads
        at most what came since, nothing for a finished match)."""
        folded = self._cache.get(match_id)
        return folded is not None and folded.stage == "ready"

    async def fold(self, match_id: str, created_at: str) -> Folded:
        """The match folded up to its last record now (cached, incremental); FoldPending when this
        call's budget ran out first (the work done so far is kept for the next call)."""
        lock = self._match_locks.setdefault(match_id, asyncio.Lock())
        async with lock:
            folded = self._cache.get(match_id)
            if folded is None:
                folded = await self._start(match_id, created_at)
            self._remember(folded)
            if len(self._match_locks) > 4 * CACHE_SIZE:
                self._match_locks = {k: v for k, v in self._match_locks.items() if v.locked()}
            if not folded.complete:
                await self._advance(folded, [self._budget_s])
            return folded

    def close(self) -> None:
        while not self._readers.empty():
            self._readers.get_nowait().close()

    # --- internals -----------------------------------------------------------------------------------
    async def _start(self, match_id: str, created_at: str) -> Folded:
        index = await self._index(match_id)
        partitions = await self._partition_count()
        partition = partition_of(match_id.encode(), partitions)
        start = index.first_offset
        if start is None:
            start = await self._with_reader(self._offset_at, partition, max(0, to_ms(created_at) - START_MARGIN_MS))
        return Folded(match_id, self._topic, partitions, partition, start, index)

    async def _advance(self, folded: Folded, budget: list[float]) -> None:
        """Move the fold on through its stages within `budget` (seconds of CPU left, spent here)."""
        while True:
            if folded.stage == "to_last":
                await self._read_into(folded, folded.index.last_offset if folded.index else None, budget)
                folded.stage = "check" if folded.finished else "to_end"
            elif folded.stage == "to_end":
                await self._read_into(folded, None, budget)
                folded.stage = "check" if folded.index is not None else "ready"
            elif folded.stage == "check":
                if folded.agrees():
                    folded.stage = "ready"
                    continue
                log.info(
                    "history: %s refolded from the partition start (the fold from offset %d disagreed with the "
                    "projection)",
                    folded.match_id,
                    folded.index.first_offset if folded.index and folded.index.first_offset is not None else -1,
                )
                folded.restart()
            else:  # ready: a match in progress reads what came since
                if not folded.finished:
                    await self._read_into(folded, None, budget)
                return

    async def _read_into(self, folded: Folded, last_offset: int | None, budget: list[float]) -> None:
        """Fold the match's records from its next offset to `last_offset` (its last accepted record,
        when the match is over) or else to the partition's current end; FoldPending if the budget
        runs out first."""
        if budget[0] <= 0:
            raise FoldPending(folded.match_id, folded.records)
        done, spent = await self._with_reader(self._read, folded, last_offset, budget[0])
        budget[0] -= spent
        if not done:
            raise FoldPending(folded.match_id, folded.records)

    def _remember(self, folded: Folded) -> None:
        self._cache[folded.match_id] = folded
        self._cache.move_to_end(folded.match_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    async def _partition_count(self) -> int:
        if self._partitions is None:
            self._partitions = await self._with_reader(self._count_partitions)
        return self._partitions

    async def _with_reader(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(reader, *args)` in a thread on one of the pool's readers."""
        reader: PartitionReader | None
        if self._readers.empty() and self._made < READERS:
            self._made += 1
            try:
                reader = await asyncio.to_thread(self._new_reader)
            except BaseException:
                self._made -= 1
                raise
        else:
            reader = await self._readers.get()
        try:
            return await asyncio.to_thread(work, reader, *args)
        except HistoryUnavailable:
            reader.close()
            self._made -= 1
            reader = None
            raise
        finally:
            if reader is not None:
                self._readers.put_nowait(reader)

    def _new_reader(self) -> PartitionReader:
        try:
            return PartitionReader(self._bootstrap, self._auth)
        except Exception as error:
            raise HistoryUnavailable(f"cannot reach the broker at {self._bootstrap}: {error}") from error

    def _count_partitions(self, reader: PartitionReader) -> int:
        partitions = reader.partitions(self._topic)
        if not partitions:
            raise HistoryUnavailable(f"topic {self._topic} does not exist on {self._bootstrap}")
        return partitions

    def _offset_at(self, reader: PartitionReader, partition: int, at_ms: int) -> int:
        return reader.offset_at(self._topic, partition, at_ms)

    def _read(self, reader: PartitionReader, folded: Folded, last: int | None, budget_s: float) -> tuple[bool, float]:
        """Fold the partition's records from `folded.next_offset` through `last` (or to its current
        end), in this thread, until this thread has used `budget_s` of CPU (one take at least, so every
        call makes progress): (reached the end, CPU seconds used)."""
        started = time.thread_time()
        topic, partition = self._topic, folded.partition
        try:
            end = reader.end(topic, partition) if last is None else last + 1
            if folded.next_offset >= end:
                return True, time.thread_time() - started
            reader.start(topic, partition, folded.next_offset)
            deadline = time.monotonic() + READ_TIMEOUT_S
            while folded.next_offset < end:  # (a transaction's markers take offsets too: by position)
                if time.monotonic() > deadline:
                    raise HistoryUnavailable(
                        f"reading {topic}[{partition}] from {folded.next_offset} to {end} took over {READ_TIMEOUT_S}s"
                    )
                taken, position = reader.take(POLL_RECORDS, 1.0)
                records = [record for record in taken if record.offset < end]
                if records:
                    self._note_read(len(records))
                    folded.feed(records)
                folded.next_offset = min(position, end)
                if folded.next_offset < end and time.thread_time() - started > budget_s:
                    return False, time.thread_time() - started
            return True, time.thread_time() - started
        except HistoryUnavailable:
            raise
        except Exception as error:
            raise HistoryUnavailable(f"reading {topic}[{partition}]: {error}") from error
