"""The rules worker's read-ahead buffer (services/rules/batching.py) and the drain loop that fills
it (the Faust adapter's workaround 7): a backlog gives whole batches, a lone record is not held
back, the drain stops while the buffer is over its capacity, move records skip Faust's per-event
path while every other record still takes it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from faust.types import TP

from services.rules.batching import RecordBuffer
from services.rules.core import Incoming
from services.rules.faust_adapter import fetch as faust_fetch

MOVES, CHANGELOG = TP("t.moves", 0), TP("t.rules-matches-changelog", 0)


@dataclass(frozen=True)
class _Message:
    """A Faust message as the drain reads it."""

    tp: TP
    offset: int
    key: bytes | None = None
    value: bytes | None = None
    generation_id: int = 0

    @property
    def topic(self) -> str:
        return self.tp.topic

    @property
    def partition(self) -> int:
        return self.tp.partition


def as_incoming(fetched: list[_Message]) -> list[Incoming]:
    """What the drain hands the fold loop's buffer for these messages."""
    return [Incoming(m.key, m.value, m.partition, m.offset, m.topic, m.generation_id) for m in fetched]


def messages(count: int, tp: TP = MOVES, first: int = 0) -> list[_Message]:
    return [_Message(tp, first + n) for n in range(count)]


def run(scenario):
    return asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def test_a_backlog_is_taken_in_whole_batches():
    async def scenario():
        buffer = RecordBuffer(most=500, within=0.001, capacity=1000)
        adding = asyncio.ensure_future(buffer.extend(messages(1200)))
        taken = [len(await buffer.take()) for _ in range(3)]
        await adding
        return taken

    assert run(scenario) == [500, 500, 200]


def test_a_lone_record_is_taken_within_the_window():
    async def scenario():
        buffer = RecordBuffer(most=500, within=0.002, capacity=1000)
        taking = asyncio.ensure_future(buffer.take())
        await asyncio.sleep(0.01)
        assert not taking.done()  # nothing yet: it waits
        loop = asyncio.get_running_loop()
        put_at = loop.time()
        await buffer.extend(messages(1))
        return len(await taking), loop.time() - put_at

    count, waited = run(scenario)
    assert count == 1 and waited < 0.5


def test_while_records_come_together_a_short_batch_waits_the_window_and_a_lone_record_does_not():
    async def scenario(first_batch: int):
        buffer = RecordBuffer(most=500, within=0.05, capacity=1000)
        await buffer.extend(messages(first_batch))
        await buffer.take()
        await buffer.extend(messages(1, first=first_batch))
        taking = asyncio.ensure_future(buffer.take())
        await asyncio.sleep(0.01)
        await buffer.extend(messages(2, first=first_batch + 1))  # arrives within the window
        return len(await taking)

    assert run(lambda: scenario(first_batch=5)) == 3  # records came together: it waited for more
    assert run(lambda: scenario(first_batch=1)) == 1  # one at a time: folded at once


def test_the_drain_waits_while_the_buffer_is_over_its_capacity():
    async def scenario():
        buffer = RecordBuffer(most=100, within=0, capacity=300)
        adding = asyncio.ensure_future(buffer.extend(messages(450)))
        await asyncio.sleep(0.01)
        waiting = not adding.done()
        await buffer.take()
        await asyncio.sleep(0.01)
        still_waiting = not adding.done()  # 350 left, still over
        await buffer.take()
        await asyncio.sleep(0.01)
        return waiting, still_waiting, adding.done(), len(buffer)

    assert run(scenario) == (True, True, True, 250)


def test_a_partition_fetched_again_leaves_the_buffer():
    async def scenario():
        buffer = RecordBuffer(most=500, within=0, capacity=1000)
        other = TP("t.moves", 1)
        await buffer.extend(messages(3) + messages(2, tp=other))
        dropped = buffer.discard(MOVES.partition)
        return dropped, [m.tp for m in await buffer.take()]

    assert run(scenario) == (3, [TP("t.moves", 1)] * 2)


class _Flag:
    def __init__(self) -> None:
        self.stopped = False

    def is_set(self) -> bool:
        return self.stopped


class FakeConsumer:
    """What `_drain_in_batches` uses of Faust's consumer: one getmany of `fetched`, then stop."""

    consumer_stopped_errors = ()

    def __init__(self, fetched: list[tuple[TP, _Message]], read_offset: dict[TP, int | None]):
        self.fetched, self.called_back, self.sunk, self.races = fetched, [], [], 0
        self._read_offset = read_offset
        self._stopped, self.should_stop = _Flag(), False
        self.diag = type("Diag", (), {"set_flag": lambda *_: None, "unset_flag": lambda *_: None})()
        self.suspend_flow = asyncio.Event()
        self.transport = type("T", (), {"app": type("A", (), {"should_stop": False})()})()
        faust_fetch.deliver_in_batches(type("App", (), {"consumer": self})(), "t.moves", self.sink)

    async def sink(self, batch):
        self.sunk.append(batch)
        self._stopped.stopped = True

    async def callback(self, message):
        self.called_back.append(message)

    async def sleep(self, seconds):
        await asyncio.sleep(seconds)

    async def wait_first(self, *coroutines):
        """mode's Service.wait_first: the first of them to finish wins, the others are cancelled."""
        self.races += 1
        tasks = [asyncio.ensure_future(c) for c in coroutines]
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()

    async def getmany(self, timeout):
        fetched, self.fetched = self.fetched, []  # one fetch, then nothing more
        for tp, message in fetched:
            yield tp, message


def test_move_records_go_to_the_buffer_in_one_list_and_the_others_through_faust():
    moves = messages(3, first=10)
    changelog = messages(2, tp=CHANGELOG)
    fetched = [(m.tp, m) for m in [moves[0], changelog[0], moves[1], changelog[1], moves[2]]]
    consumer = FakeConsumer(fetched, {MOVES: 11, CHANGELOG: None})

    class Fetcher:
        _stopped = _Flag()

    asyncio.run(consumer._drain_messages(Fetcher()))
    # offset 10 is below Faust's read offset (11): dropped, as Faust does
    assert consumer.sunk == [as_incoming(moves[1:])]
    assert consumer.called_back == changelog
    assert consumer._read_offset == {MOVES: 12, CHANGELOG: 1}
    assert consumer.races == 1  # one race against a flow suspension for the fetch, not one per record


def test_a_flow_suspension_stops_delivering_the_rest_of_a_fetch_and_their_read_offsets_stay():
    """A rebalance suspends the flow while Faust's callback waits (say, on a full queue): the
    records not delivered are not marked read, so they come again after the rebalance."""
    changelog = messages(3, tp=CHANGELOG)
    consumer = FakeConsumer([(m.tp, m) for m in changelog], {CHANGELOG: None})

    async def blocked_callback(message):
        consumer.called_back.append(message)
        if message.offset == 1:
            consumer.suspend_flow.set()
            await asyncio.sleep(60)

    consumer.callback = blocked_callback

    class Fetcher:
        _stopped = _Flag()

    async def drain_once():
        task = asyncio.ensure_future(consumer._drain_messages(Fetcher()))
        while consumer.races == 0 or not consumer.suspend_flow.is_set():
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        consumer._stopped.stopped = True
        await asyncio.wait_for(task, 5)

    asyncio.run(drain_once())
    assert consumer.called_back == changelog[:2]
    assert consumer._read_offset == {CHANGELOG: 0}
