"""The rules worker's read-ahead buffer (services/rules/batching.py): a backlog gives whole
batches, a lone record is not held back, the feeder stops reading when the buffer is full, and
Faust's take_events, which it replaces, still stops buffering while a batch is held."""
from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass

import pytest
from faust.types import TP

from services.rules.batching import EventBuffer

MOVES = TP("t.moves", 0)


@dataclass(frozen=True)
class _Message:
    tp: TP
    offset: int


@dataclass(frozen=True)
class _Event:
    message: _Message


class FakeStream:
    """`events()` yields what is put in, counting what was read."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        self.read = 0

    def put(self, count: int, tp: TP = MOVES) -> None:
        for _ in range(count):
            self.queue.put_nowait(_Event(_Message(tp, self.read + self.queue.qsize())))

    async def events(self):
        while True:
            event = await self.queue.get()
            if isinstance(event, BaseException):
                raise event
            self.read += 1
            yield event


def run(scenario):
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def test_a_backlog_is_taken_in_whole_batches():
    async def scenario():
        stream = FakeStream()
        stream.put(1200)
        async with EventBuffer(stream, most=500, within=0.001, capacity=1000) as buffer:
            await asyncio.sleep(0.05)
            return [len(await buffer.take()) for _ in range(3)]

    assert run(scenario) == [500, 500, 200]


def test_records_keep_arriving_while_the_fold_holds_a_batch():
    """What take_events did not do: while the fold waits (Kafka acknowledging batches in
    flight), the next batch fills up."""
    async def scenario():
        stream = FakeStream()
        async with EventBuffer(stream, most=500, within=0.001, capacity=1000) as buffer:
            stream.put(1)
            first = await buffer.take()
            stream.put(300)  # arrive while the fold is busy with `first`
            await asyncio.sleep(0.05)
            return len(first), len(await buffer.take())

    assert run(scenario) == (1, 300)


def test_a_lone_record_is_taken_within_the_window():
    async def scenario():
        stream = FakeStream()
        async with EventBuffer(stream, most=500, within=0.002, capacity=1000) as buffer:
            taking = asyncio.ensure_future(buffer.take())
            await asyncio.sleep(0.01)
            assert not taking.done()  # nothing yet: it waits
            stream.put(1)
            loop = asyncio.get_running_loop()
            put_at = loop.time()
            batch = await taking
            return len(batch), loop.time() - put_at

    count, waited = run(scenario)
    assert count == 1 and waited < 0.5


def test_the_feeder_stops_reading_when_the_buffer_is_full():
    async def scenario():
        stream = FakeStream()
        stream.put(5000)
        async with EventBuffer(stream, most=100, within=0, capacity=300) as buffer:
            await asyncio.sleep(0.05)
            held, read = len(buffer), stream.read
            await buffer.take()
            await asyncio.sleep(0.05)
            return held, read, len(buffer)

    held, read, after = run(scenario)
    assert held == 300 and read <= 301 and after == 300


def test_a_partition_fetched_again_leaves_the_buffer():
    async def scenario():
        stream = FakeStream()
        other = TP("t.moves", 1)
        stream.put(3)
        stream.put(2, tp=other)
        async with EventBuffer(stream, most=500, within=0, capacity=1000) as buffer:
            await asyncio.sleep(0.05)
            dropped = buffer.discard(MOVES)
            return dropped, [event.message.tp for event in await buffer.take()]

    assert run(scenario) == (3, [TP("t.moves", 1)] * 2)


def test_what_stops_the_feeder_reaches_the_fold():
    async def scenario():
        stream = FakeStream()
        async with EventBuffer(stream, most=10, within=0, capacity=10) as buffer:
            stream.queue.put_nowait(RuntimeError("broken stream"))
            await buffer.take()

    with pytest.raises(RuntimeError, match="broken stream"):
        run(scenario)


def test_fausts_take_events_stops_buffering_while_the_agent_holds_a_batch():
    """Why EventBuffer exists; when this fails, take_events may do what the worker needs."""
    from faust.streams import Stream

    source = inspect.getsource(Stream.take_events)
    assert "if buffer_consuming is not None:" in source and "await buffer_consuming" in source
    assert "buffer_consuming = self.loop.create_future()" in source
