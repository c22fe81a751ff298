"""The rules worker's pipeline: batches of move records from the fold to stored positions, over the
narrow ports of ports.py (the Faust adapter implements them; the unit tests fake them in memory).

    fold k -> produce k (not awaited) -> queue -> the committer, every batch queued by then as one group:
    fold k+1 ...                                    results acked -> outcomes produced, acked ->
                                                    states stored, acked -> positions stored
    commit (periodic, on rebalance, on stop): the group's offsets just after the positions Kafka has

Each step waits for the one before it, and each wait is what a crash relies on:
- results acknowledged before the states are stored: a crash before the states are stored makes
  the records come again, folded again from the old states to the same result bytes (a repeat,
  never a gap); after, they are skipped (at or below their match's stored offset);
- an outcome is produced once its match's final result is acknowledged, so a projector that
  sees it knows the result is on plylog.results (the projector's check of outcomes);
- states acknowledged before the positions are stored: a position never covers a state Kafka
  did not take (the records up to it would be skipped as answered);
- offsets committed only up to positions Kafka has: a (re)assigned partition is fetched from at
  most its position (records at or below it are skipped), never past it;
- a rebalance drops every batch not yet stored: their records come again from the stored
  positions and are folded again from the stored states. The fold loop drops the pending writes
  when it folds the first batch of a new generation; the committer, skipping a batch of the old
  one, forgets that batch's writes only.

The committer takes every batch waiting in the queue as one group: one changelog round trip covers
them all (taken one by one, that round trip was the worker's pace). Folding batch k+1 needs the
states batch k produced before they are stored: `Pending` holds them (the bytes that will be
stored, so the decoded-state cache stays valid) and is what the fold reads before the table. At
most `in_flight` records are in flight (`Room`): the fold waits when Kafka is slower than it. The
bound is on records, not batches: a bound of 8 batches stalled the fold whenever a changelog round
trip took longer than 8 small batches took to come (docs/decisions/rules-latency.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from services.common.stage_trace import StageTrace, event_id

from .core import Batch, Incoming, Outgoing, RulesCore, position_key, read_position
from .ports import Group, PositionStore, Producer, Source, Table
from .produce import acknowledged, produce_all, start

log = logging.getLogger("plylog.rules")


@dataclass
class InFlight:
    number: int
    generation: int
    batch: Batch
    deliveries: list[asyncio.Future[Any]]
    started: float
    behind: int = 0  # records already buffered behind the batch when it was taken


@dataclass
class Pending:
    """Writes of folded batches that are not stored yet: key -> (value, partition, batch number)."""

    writes: dict[bytes, tuple[bytes, int, int]] = field(default_factory=dict)

    def load(self, table_get: Callable[[bytes], bytes | None]) -> Callable[[bytes], bytes | None]:
        """What the next fold reads: a pending write, else the table."""
        writes = self.writes

        def get(key: bytes) -> bytes | None:
            pending = writes.get(key)
            return pending[0] if pending is not None else table_get(key)

        return get

    def position(self, stored: Callable[[int], int]) -> Callable[[int], int]:
        """What the next fold reads as a partition's position: a pending one, else the stored one."""
        writes = self.writes

        def get(partition: int) -> int:
            pending = writes.get(position_key(partition))
            return read_position(pending[0]) if pending is not None else stored(partition)

        return get

    def add(self, number: int, batch: Batch) -> None:
        for key, (value, partition) in batch.writes.items():
            self.writes[key] = (value, partition, number)

    def settled(self, numbers: set[int]) -> None:
        """Batches `numbers` are in the table, or were dropped by a rebalance: forget their writes no
        later batch has replaced. Never more: batches folded after a rebalance may be pending already."""
        self.writes = {k: v for k, v in self.writes.items() if v[2] not in numbers}

    def drop(self) -> None:
        self.writes.clear()


class Pipeline:
    """The fold loop and its committer over the ports: `await pipeline.run()` until it is cancelled
    or a batch fails (then it raises that error: the worker stops, and a restart answers the
    batch again from the stored positions)."""

    def __init__(
        self,
        core: RulesCore,
        source: Source,
        producer: Producer,
        table: Table,
        positions: PositionStore,
        group: Group,
        *,
        in_flight: int = 4000,
        busy_records: int = 32,
        on_stored: Callable[[InFlight, int], None] = lambda flight, group: None,
        trace: StageTrace | None = None,
    ):
        self.core, self.source, self.producer = core, source, producer
        self.table, self.positions, self.group = table, positions, group
        self.busy_records, self.on_stored, self.trace = busy_records, on_stored, trace
        self.queue: asyncio.Queue[InFlight] = asyncio.Queue()
        self.room = Room(in_flight)
        self.pending = Pending()
        self.folded = 0  # batches folded so far (their numbers)
        self.folded_in: int | None = None  # the generation the last batch was folded in

    async def run(self) -> None:
        async with Beside(self.commit_batches) as committer:
            while True:
                await self.fold_next(committer.task)

    # --- the fold loop: fold, produce ---------------------------------------------------------------
    async def fold_next(self, committer: asyncio.Task[None]) -> None:
        """Fold the next records fetched, hand their results to the producer, queue the batch."""
        records = await self.source.take()
        started = time.perf_counter()
        generation, owned = self.group.generation, self.group.owned()
        # records fetched before a rebalance are fetched again from the stored positions
        incoming = [r for r in records if r.generation == generation and r.partition in owned]
        if not incoming:
            return
        if generation != self.folded_in:  # after a rebalance, fold on stored states only
            self.pending.drop()
            self.folded_in = generation
        self._mark("taken", incoming, started)
        self.folded += 1
        batch = self.core.fold_batch(
            incoming, self.pending.load(self.table.get), self.pending.position(self.positions.position)
        )
        self.pending.add(self.folded, batch)
        self._mark("folded", incoming)
        self.producer.pace(len(incoming) + len(self.source) >= self.busy_records)
        firsts = self.sent_at_once(batch)
        deliveries = await start(self.producer, firsts)
        self._mark_deliveries(firsts, deliveries)
        for partition, offset in batch.rewind.items():
            self.source.discard(partition)  # the records beyond the gap come again
            await self.group.fetch_again(partition, offset)
        flight = InFlight(self.folded, generation, batch, deliveries, started, len(self.source))
        await put_or_fail(self.queue, self.room, flight, committer)

    # --- the committer: acknowledgements, then states, then positions -----------------------------
    async def commit_batches(self) -> None:
        while True:
            await self.store(await take_queued(self.queue))

    async def store(self, group: list[InFlight]) -> None:
        """In batch order, the queued batches as one group: wait for their results, produce their
        outcomes, store their states, wait for those, then store their positions."""
        for flight in group:
            firsts = self.sent_at_once(flight.batch)
            flight.batch.counts["replaced"] = await acknowledged(self.producer, firsts, flight.deliveries)
        outcomes = [out for flight in group for out in self.sent_once_acknowledged(flight.batch)]
        if outcomes:  # only once their matches' final results are acknowledged
            group[-1].batch.counts["replaced"] += await produce_all(self.producer, outcomes)
        generation = self.group.generation  # from here to the states stored, no await
        current = [flight for flight in group if flight.generation == generation]
        dropped = [flight for flight in group if flight.generation != generation]
        if dropped:  # not drop(): batches of the new generation may be pending
            self._settled(dropped)
            log.warning(
                "rebalanced while batches %s were in flight: their states are not stored; the records will "
                "be answered again from the stored positions (same results)",
                ", ".join(str(flight.number) for flight in dropped),
            )
        if not current:
            return
        for key, (value, partition) in merged([flight.batch.state_writes() for flight in current]).items():
            self.table.store(key, value, partition)
        await self.table.acknowledged()
        if self.group.generation == generation:  # else the next generation folds on: its positions follow
            for partition, offset in merged([flight.batch.positions() for flight in current]).items():
                self.positions.store(partition, offset)
        self._settled(current)
        for flight in current:
            self.on_stored(flight, len(current))
            self._mark("stored", [out.cause for out in flight.batch.sends if out.cause is not None])

    def _settled(self, flights: list[InFlight]) -> None:
        self.pending.settled({flight.number for flight in flights})
        self.room.free(sum(flight.batch.counts["records"] for flight in flights))

    @staticmethod
    def sent_at_once(batch: Batch) -> list[Outgoing]:
        """What a batch produces as soon as it is folded: its results and dead letters."""
        return [out for out in batch.sends if out.kind != "outcomes"]

    @staticmethod
    def sent_once_acknowledged(batch: Batch) -> list[Outgoing]:
        """What a batch produces once Kafka has its results: its outcomes."""
        return [out for out in batch.sends if out.kind == "outcomes"]

    # --- the stage trace (services/common/stage_trace.py; off unless PLYLOG_TRACE_DIR is set) --------
    def _mark(self, stage: str, records: list[Incoming], at: float | None = None) -> None:
        if self.trace is not None:
            self.trace.mark(stage, [event_id(r.value) for r in records], at)

    def _mark_deliveries(self, sends: list[Outgoing], deliveries: list[asyncio.Future[Any]]) -> None:
        if self.trace is None:
            return
        trace = self.trace
        self._mark("produced", [out.cause for out in sends if out.cause is not None])
        for out, delivery in zip(sends, deliveries, strict=True):
            delivery.add_done_callback(_marker(trace, "acked", [event_id(out.value)]))


def _marker(trace: StageTrace, stage: str, ids: list[str | None]) -> Callable[[asyncio.Future[Any]], None]:
    def mark(_: asyncio.Future[Any]) -> None:
        trace.mark(stage, ids)

    return mark


async def commit_stored_positions(positions: PositionStore, group: Group) -> bool:
    """Commit the group's offsets just after the stored positions of the partitions owned, once
    Kafka has those positions (so a committed offset never runs ahead of a stored position)."""
    offsets = {partition: positions.position(partition) + 1 for partition in sorted(group.owned())}
    offsets = {partition: offset for partition, offset in offsets.items() if offset > 0}
    if not offsets:
        return False
    try:
        await positions.acknowledged()
    except Exception as error:  # noqa: BLE001 - the committer fails the batch and stops the worker
        log.warning("offsets not committed: a position was not written (%s: %s)", type(error).__name__, error)
        return False
    return await group.commit(offsets)


async def take_queued(queue: asyncio.Queue[InFlight]) -> list[InFlight]:
    """Wait for one item, then take every item already queued behind it, in order."""
    items = [await queue.get()]
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


def merged(writes: list[dict[Any, Any]]) -> dict[Any, Any]:
    """Writes of batches in order, the last value of a key winning (stored once)."""
    result: dict[Any, Any] = {}
    for batch_writes in writes:
        result.update(batch_writes)
    return result


class Room:
    """Records in flight (folded, not stored yet) at most `most`; a batch larger goes alone."""

    def __init__(self, most: int):
        self.most, self.used = most, 0
        self._freed = asyncio.Event()

    def fits(self, records: int) -> bool:
        return self.used == 0 or self.used + records <= self.most

    async def wait(self, records: int) -> None:
        while not self.fits(records):
            self._freed.clear()
            await self._freed.wait()

    def take(self, records: int) -> None:
        self.used += records

    def free(self, records: int) -> None:
        self.used -= records
        self._freed.set()


async def put_or_fail(
    queue: asyncio.Queue[InFlight], room: Room, item: InFlight, committer: asyncio.Task[None]
) -> None:
    """Queue `item` for the committer once there is room for its records, or raise what stopped
    the committer (a failed batch)."""
    if committer.done():
        committer.result()
    records = item.batch.counts["records"]
    if not room.fits(records):
        waiting = asyncio.ensure_future(room.wait(records))
        try:
            done, _ = await asyncio.wait({waiting, committer}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            waiting.cancel()  # the worker stops: nothing waits for room any more
            raise
        if committer in done:
            waiting.cancel()
            committer.result()
            raise RuntimeError("the committer stopped")
    room.take(records)
    queue.put_nowait(item)


class Beside:
    """Runs a task beside the current one (the committer beside the fold loop). If that task fails
    (Kafka refused a batch), the current one is stopped at once with its error, whatever it waits
    for (records that may not come): `async with Beside(run) as committer:` around the loop."""

    def __init__(self, run: Callable[[], Awaitable[None]]):
        self._run = run
        self._task: asyncio.Task[None] | None = None

    @property
    def task(self) -> asyncio.Task[None]:
        assert self._task is not None, "used outside its `async with`"
        return self._task

    async def __aenter__(self) -> Beside:
        current = asyncio.current_task()
        self._task = asyncio.ensure_future(self._run())

        def stop_current(task: asyncio.Task[None]) -> None:
            if current is not None and not task.cancelled() and task.exception() is not None:
                current.cancel()

        self._task.add_done_callback(stop_current)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        task = self.task
        failed = task.done() and not task.cancelled() and task.exception() is not None
        task.cancel()
        if failed and (kind is None or issubclass(kind, asyncio.CancelledError)):
            raise task.exception()  # type: ignore[misc]
