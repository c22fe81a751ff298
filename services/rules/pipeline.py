"""Batches in flight: the rules worker folds the next batch while Kafka acknowledges the previous
ones, and stores states and positions in batch order as the acknowledgements come.

    fold k  ->  produce k (not awaited)  ->  queue  ->  [acked k.. -> store states k.. -> acked -> store positions k..]
    fold k+1 ...                                         (the committer, every batch queued at once, in order)

The committer takes every batch waiting in the queue as one group: one changelog round trip
(acks=all, tens of milliseconds on a loaded cluster) covers them all. Taking them one by one
made that round trip the worker's pace: small batches, one round trip each, the fold idle.

Folding batch k+1 needs the states batch k produced before they are stored: `Pending` holds
them (the bytes that will be stored, so the decoded-state cache stays valid), and is what the
fold reads before the table. The guarantees stay those of one batch at a time: a state is
stored only after Kafka acknowledged the results that lead to it, and a position only after the
states it covers; a batch whose acknowledgements fail stops the worker (the committer raises
into the agent); a rebalance drops every batch not yet stored (their records come again from
the stored positions, and are folded again from the stored states, to the same results): the
fold loop drops the pending writes when it folds its first batch of a new generation, and the
committer, skipping a batch of the old one, forgets that batch's writes only.
At most DEPTH batches are in flight: the fold waits when Kafka is slower than it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from .core import Batch

DEPTH = 8


@dataclass
class InFlight:
    number: int
    generation: int
    batch: Batch
    deliveries: list[asyncio.Future]
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

    def add(self, number: int, batch: Batch) -> None:
        for key, (value, partition) in batch.writes.items():
            self.writes[key] = (value, partition, number)

    def settled(self, number: int) -> None:
        """Batch `number` is in the table, or was dropped by a rebalance: forget its writes no later
        batch has replaced. Never more: batches folded after a rebalance may be pending already."""
        self.writes = {k: v for k, v in self.writes.items() if v[2] != number}

    def drop(self) -> None:
        self.writes.clear()


async def take_queued(queue: asyncio.Queue) -> list:
    """Wait for one item, then take every item already queued behind it, in order."""
    items = [await queue.get()]
    while not queue.empty():
        items.append(queue.get_nowait())
    return items


def merged(writes: list[dict]) -> dict:
    """Writes of batches in order, the last value of a key winning (stored once)."""
    result: dict = {}
    for batch_writes in writes:
        result.update(batch_writes)
    return result


async def put_or_fail(queue: asyncio.Queue, item: InFlight, committer: asyncio.Task) -> None:
    """Queue `item` for the committer, or raise what stopped the committer (a failed batch)."""
    if committer.done():
        committer.result()
    putting = asyncio.ensure_future(queue.put(item))
    done, _ = await asyncio.wait({putting, committer}, return_when=asyncio.FIRST_COMPLETED)
    if committer in done:
        putting.cancel()
        committer.result()
        raise RuntimeError("the committer stopped")


class Committer:
    """Runs the committer beside the fold loop (the current task). If the committer fails (Kafka
    refused a batch), the fold loop is stopped at once with that error, whatever it is waiting
    for (records that may not come): `async with Committer(run) as committer:` around the loop."""

    def __init__(self, run):
        self._run = run
        self.task: asyncio.Task | None = None

    async def __aenter__(self) -> Committer:
        folding = asyncio.current_task()
        self.task = asyncio.ensure_future(self._run())

        def stop_folding(task: asyncio.Task) -> None:
            if not task.cancelled() and task.exception() is not None:
                folding.cancel()

        self.task.add_done_callback(stop_folding)
        return self

    async def __aexit__(self, kind, error, trace) -> None:
        failed = self.task.done() and not self.task.cancelled() and self.task.exception() is not None
        self.task.cancel()
        if failed and (kind is None or issubclass(kind, asyncio.CancelledError)):
            raise self.task.exception()
