"""Batches of move records for the rules worker's fold loop, buffered by a task of its own.

Why not Faust's `Stream.take_events`: while the agent holds a batch, take_events stops buffering
(its `add_to_buffer` awaits `buffer_consuming` until the batch is handed back). The fold loop
holds its batch while it waits for Kafka (at most pipeline.DEPTH batches in flight), so nothing
accumulated during the wait, and every batch was what Faust delivered in the `within` window
after it: measured on the local cluster with a backlog of 30,000 moves, 6.9 records a batch, one
Kafka round trip per few records, the worker ~30 % busy. Here a feeder task reads the agent's
stream (`Stream.events()`, as Faust means streams to be read) into a bounded buffer all the time,
and the fold takes everything buffered at once: a backlog gives full batches whatever the load
shape; an idle worker still answers a lone record within `within`.

Faust acks each event as the feeder takes the next; the worker's commits do not depend on acks
(faust_fixes 2: offsets are committed from the stored positions), and events of an older
generation are left out by the fold loop as before. When the buffer is full the feeder stops
reading, and Faust's own queue and fetching stop behind it.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Optional


class EventBuffer:
    """`async with EventBuffer(stream, most, within, capacity) as buffer: batch = await buffer.take()`"""

    def __init__(self, stream: Any, most: int, within: float, capacity: int):
        if capacity < most:
            raise ValueError(f"capacity {capacity} is below the batch size {most}")
        self._stream, self._most, self._within, self._capacity = stream, most, within, capacity
        self._events: deque = deque()
        self._arrived = asyncio.Event()
        self._space = asyncio.Event()
        self._feeder: Optional[asyncio.Task] = None

    async def __aenter__(self) -> "EventBuffer":
        self._feeder = asyncio.ensure_future(self._feed())
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self._feeder.cancel()

    async def _feed(self) -> None:
        async for event in self._stream.events():
            while len(self._events) >= self._capacity:
                self._space.clear()
                await self._space.wait()
            self._events.append(event)
            self._arrived.set()

    async def take(self) -> list:
        """The events buffered, at most `most`; with fewer than that, first wait `within` for
        more. Waits for the first event; raises what stopped the feeder."""
        while not self._events:
            self._raise_if_stopped()
            self._arrived.clear()
            waiting = asyncio.ensure_future(self._arrived.wait())
            try:
                await asyncio.wait({waiting, self._feeder}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiting.cancel()
        if len(self._events) < self._most and self._within:
            await asyncio.sleep(self._within)
        events = self._events
        batch = [events.popleft() for _ in range(min(len(events), self._most))]
        self._space.set()
        return batch

    def discard(self, tp: Any) -> int:
        """Leave out the buffered events of partition `tp` (it is fetched again); how many."""
        kept = deque(event for event in self._events if event.message.tp != tp)
        dropped, self._events = len(self._events) - len(kept), kept
        self._space.set()
        return dropped

    def _raise_if_stopped(self) -> None:
        if self._feeder.done():
            self._feeder.result()  # raises the feeder's error
            raise RuntimeError("the stream of move records ended")

    def __len__(self) -> int:
        return len(self._events)
