"""The rules worker's read-ahead buffer of move records, between the consumer and the fold loop.

The consumer's drain loop (the Faust adapter's fetch path, workaround 7) adds the move records of
each fetch as one list; the fold loop takes everything buffered at once. So a backlog gives full
batches whatever the load shape; while records come together (the last batch had more than one) a
short batch first waits `within` for more, and a lone record (one client, a quiet worker) is folded
at once.

Why not Faust's `Stream.take_events`: while the agent holds a batch, take_events stops buffering
(its `add_to_buffer` awaits `buffer_consuming` until the batch is handed back), and each event Faust
delivers one by one is costly (docs/decisions/faust-batch-delivery.md).

When more than `capacity` records are buffered, `extend` returns only once the fold has taken
the buffer below it: the drain loop then fetches nothing more (Kafka keeps the backlog). One
poll brings at most a batch (`broker_max_poll_records`, the Faust adapter's settings), so the
buffer holds at most `capacity` records and one poll more.
"""

from __future__ import annotations

import asyncio
from collections import deque

from .core import Incoming


class RecordBuffer:
    """`await buffer.extend(messages)` on one side, `batch = await buffer.take()` on the other."""

    def __init__(self, most: int, within: float, capacity: int):
        if capacity < most:
            raise ValueError(f"capacity {capacity} is below the batch size {most}")
        self._most, self._within, self._capacity = most, within, capacity
        self._records: deque[Incoming] = deque()
        self._last_taken = 0
        self._arrived = asyncio.Event()
        self._space = asyncio.Event()

    async def extend(self, records: list[Incoming]) -> None:
        """Add `records`; wait while the buffer holds more than its capacity."""
        self._records.extend(records)
        self._arrived.set()
        while len(self._records) > self._capacity:
            self._space.clear()
            await self._space.wait()

    async def take(self) -> list[Incoming]:
        """The records buffered, at most `most`; with fewer than that, while records come together
        (the last batch had more than one), first wait `within` for more. Waits for the first record."""
        while not self._records:
            self._arrived.clear()
            await self._arrived.wait()
        if self._last_taken > 1 and len(self._records) < self._most and self._within:
            await asyncio.sleep(self._within)
        records = self._records
        batch = [records.popleft() for _ in range(min(len(records), self._most))]
        self._last_taken = len(batch)
        self._space.set()
        return batch

    def discard(self, partition: int) -> int:
        """Leave out the buffered records of `partition` (it is fetched again); how many."""
        kept = deque(record for record in self._records if record.partition != partition)
        dropped, self._records = len(self._records) - len(kept), kept
        self._space.set()
        return dropped

    def __len__(self) -> int:
        return len(self._records)
