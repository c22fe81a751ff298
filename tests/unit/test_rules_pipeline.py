"""The pieces of the rules worker's pipeline (services/rules/pipeline.py): the next fold reads the
states and positions of batches not stored yet, a stored batch leaves only what later batches
replaced, and a failed committer stops the fold loop at once with its error. The pipeline as a
whole, through crashes and rebalances: test_rules_pipeline_crashes.py."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from services.rules.core import Batch, position_key
from services.rules.pipeline import Beside, InFlight, Pending, Room, merged, put_or_fail, take_queued


def batch(**writes: bytes) -> Batch:
    return Batch(writes={key.encode(): (value, 0) for key, value in writes.items()})


def test_the_next_fold_reads_pending_states_before_the_table():
    table = {b"a": b"stored-a", b"b": b"stored-b"}
    pending = Pending()
    pending.add(1, batch(a=b"a-after-1"))
    get = pending.load(table.get)
    assert (get(b"a"), get(b"b"), get(b"c")) == (b"a-after-1", b"stored-b", None)


def test_the_next_fold_reads_a_pending_position_before_the_stored_one():
    pending = Pending()
    pending.add(1, Batch(writes={position_key(3): (b"41", 3)}))
    position = pending.position({3: 7, 4: 9}.get)
    assert (position(3), position(4)) == (41, 9)


def test_a_stored_batch_keeps_the_writes_a_later_batch_replaced():
    pending = Pending()
    pending.add(1, batch(a=b"a1", b=b"b1"))
    pending.add(2, batch(a=b"a2"))
    pending.settled({1})
    get = pending.load({}.get)
    assert (get(b"a"), get(b"b")) == (b"a2", None)  # b is in the table now; a only after batch 2
    pending.settled({2})
    assert pending.writes == {}


def test_skipping_a_batch_of_the_old_generation_keeps_the_batches_folded_after_the_rebalance():
    # batch 1 (old generation) in flight; the rebalance drops it; batch 2 (new generation) folds
    # the match's create again; then the committer skips batch 1: batch 2's state must stay
    pending = Pending()
    pending.add(1, batch(m=b"created-in-1"))
    pending.drop()
    pending.add(2, batch(m=b"created-in-2"))
    pending.settled({1})
    assert pending.load({}.get)(b"m") == b"created-in-2"


def test_dropping_forgets_every_batch_in_flight():
    pending = Pending()
    pending.add(1, batch(a=b"a1"))
    pending.drop()
    assert pending.load({b"a": b"stored"}.get)(b"a") == b"stored"


def flight(number: int, records: int = 1) -> InFlight:
    return InFlight(number, 1, Batch(counts=Counter(records=records)), [], 0.0)


def test_a_failed_committer_stops_a_fold_loop_waiting_for_records():
    async def scenario():
        async def committer():
            await asyncio.sleep(0.01)
            raise RuntimeError("Kafka refused batch 1")

        async with Beside(committer):
            await asyncio.sleep(30)  # the fold loop waiting for records that do not come

    with pytest.raises(RuntimeError, match="refused batch 1"):
        asyncio.run(asyncio.wait_for(scenario(), 5))


def test_queueing_after_the_committer_failed_raises_its_error():
    async def scenario():
        queue: asyncio.Queue = asyncio.Queue()
        room = Room(10)
        room.take(8)  # 8 records in flight: the next 5 wait for the committer

        async def fail():
            await asyncio.sleep(0.01)
            raise ValueError("no leader for partition 3")

        committer = asyncio.ensure_future(fail())
        await put_or_fail(queue, room, flight(2, records=5), committer)

    with pytest.raises(ValueError, match="no leader"):
        asyncio.run(asyncio.wait_for(scenario(), 5))


def test_the_committer_takes_batches_in_order_and_is_cancelled_when_the_loop_ends():
    taken: list[int] = []

    async def scenario():
        queue: asyncio.Queue = asyncio.Queue()
        room = Room(2)

        async def commit():
            while True:
                taken.append((await queue.get()).number)
                room.free(1)

        async with Beside(commit) as committer:
            for number in range(1, 6):
                await put_or_fail(queue, room, flight(number), committer.task)
            while len(taken) < 5:
                await asyncio.sleep(0)
        await asyncio.sleep(0)
        return committer.task.cancelled()

    assert asyncio.run(asyncio.wait_for(scenario(), 5)) is True
    assert taken == [1, 2, 3, 4, 5]


def test_the_fold_waits_for_room_by_records_in_flight_not_batches_and_a_large_batch_goes_alone():
    async def scenario():
        queue: asyncio.Queue = asyncio.Queue()
        room = Room(100)
        committer = asyncio.ensure_future(asyncio.sleep(30))
        for number in range(1, 51):  # 50 small batches fit: no wait
            await asyncio.wait_for(put_or_fail(queue, room, flight(number, records=2), committer), 1)
        waiting = asyncio.ensure_future(put_or_fail(queue, room, flight(51, records=500), committer))
        await asyncio.sleep(0.01)
        blocked = not waiting.done()
        room.free(100)  # the committer stored them all: the large one goes, alone
        await asyncio.wait_for(waiting, 1)
        committer.cancel()
        return blocked, queue.qsize(), room.used

    assert asyncio.run(scenario()) == (True, 51, 500)


def test_the_committer_takes_every_queued_batch_as_one_group_in_order():
    async def scenario():
        queue: asyncio.Queue = asyncio.Queue(8)
        for number in (1, 2, 3):
            queue.put_nowait(flight(number))
        first = [f.number for f in await take_queued(queue)]
        waiting = asyncio.ensure_future(take_queued(queue))
        await asyncio.sleep(0)
        assert not waiting.done()  # an empty queue: it waits for the next batch
        queue.put_nowait(flight(4))
        return first, [f.number for f in await waiting]

    assert asyncio.run(scenario()) == ([1, 2, 3], [4])


def test_a_group_stores_each_key_once_with_its_latest_value():
    writes = [{b"a": (b"a1", 0), b"b": (b"b1", 1)}, {b"a": (b"a2", 0)}, {}]
    assert merged(writes) == {b"a": (b"a2", 0), b"b": (b"b1", 1)}
