"""The consumer group port over Faust (services/rules/faust_adapter/group.py): a commit and a seek
run in the consumer's thread, cover only the partitions still assigned, and a refusal around a
rebalance does not stop the worker; the tests of aiokafka's and Faust's own behaviour fail the day
those change."""

from __future__ import annotations

import logging

import pytest
from faust.types import TP

from services.rules.faust_adapter import group as faust_group


class _Consumer:
    """aiokafka's consumer as a commit and a seek see it: an assignment, and a commit that may be
    refused."""

    def __init__(self, assigned: set, refusal: Exception | None = None):
        self.assigned, self.refusal, self.committed = assigned, refusal, {}

    def assignment(self) -> set:
        return self.assigned

    async def commit(self, offsets: dict) -> None:
        if self.refusal is not None:
            raise self.refusal
        self.committed.update(offsets)


class _ConsumerThread:
    """Faust's consumer thread (`AIOKafkaConsumerThread`) as a commit and a seek see it:
    `_seek_wait` seeks and waits as Faust's does, or raises `seek_refusal`."""

    def __init__(self, consumer: _Consumer, seek_refusal: Exception | None = None):
        self.consumer, self.seek_refusal = consumer, seek_refusal
        self.crashed, self.tp_last_committed_at, self.sought = None, {}, {}
        self.log = logging.getLogger("test.consumer-thread")

    def _ensure_consumer(self) -> _Consumer:
        return self.consumer

    def assignment(self) -> set:
        return {TP(tp.topic, tp.partition) for tp in self.consumer.assigned}

    async def _seek_wait(self, consumer: _Consumer, offsets: dict) -> None:
        if self.seek_refusal is not None:
            raise self.seek_refusal
        self.sought.update(offsets)

    async def crash(self, error: BaseException) -> None:
        self.crashed = error

    async def call_thread(self, fun, *args):
        return await fun(*args)


async def test_fetch_again_seeks_and_waits_in_the_consumer_thread():
    from aiokafka import TopicPartition

    class App:
        class consumer:
            _thread = _ConsumerThread(_Consumer({TopicPartition("t.moves", 2)}))

    await faust_group.FaustGroup(App(), "t.moves").fetch_again(2, 90)
    assert App.consumer._thread.sought == {TP("t.moves", 2): 90}


async def test_aiokafka_refuses_to_seek_a_partition_no_longer_assigned():
    """What stopped a worker whose partition was revoked while the fold awaited the producer."""
    from aiokafka import TopicPartition
    from aiokafka.consumer.subscription_state import SubscriptionState
    from aiokafka.errors import IllegalStateError

    state = SubscriptionState()
    state.subscribe({"t.moves"})
    state.assign_from_subscribed({TopicPartition("t.moves", 0)})
    with pytest.raises(IllegalStateError):
        state.seek(TopicPartition("t.moves", 1), 5)


async def test_a_partition_revoked_before_or_during_its_seek_is_not_fetched_again():
    from aiokafka import TopicPartition
    from aiokafka.errors import IllegalStateError

    revoked = _ConsumerThread(_Consumer({TopicPartition("t.moves", 0)}))
    assert await faust_group.seek_if_assigned(revoked, TP("t.moves", 2), 90) is False
    assert revoked.sought == {}
    during = _ConsumerThread(_Consumer({TopicPartition("t.moves", 2)}), IllegalStateError("No current assignment"))
    assert await faust_group.seek_if_assigned(during, TP("t.moves", 2), 90) is False
    assigned = _ConsumerThread(_Consumer({TopicPartition("t.moves", 2)}))
    assert await faust_group.seek_if_assigned(assigned, TP("t.moves", 2), 90) is True
    assert assigned.sought == {TP("t.moves", 2): 90}


def test_a_commit_forgets_the_acks_below_it_as_fausts_own_commit_would():
    from intervaltree import IntervalTree

    moves, other = TP("t.moves", 0), TP("t.moves", 1)

    class Consumer:
        _committed_offset = {moves: None, other: 7}
        _acked = {moves: [3, 4, 5, 6, 9], other: [8]}
        _acked_index = {moves: {3, 4, 5, 6, 9}, other: {8}}
        _gap = {moves: IntervalTree.from_tuples([(1, 3), (7, 9)])}

    consumer = Consumer()
    faust_group.forget_acks_below(consumer, {moves: 6})
    assert consumer._committed_offset == {moves: 6, other: 7}
    assert consumer._acked == {moves: [6, 9], other: [8]} and consumer._acked_index[moves] == {6, 9}
    assert sorted((gap.begin, gap.end) for gap in consumer._gap[moves]) == [(7, 9)]


async def test_faust_stops_the_worker_when_a_commit_is_refused_around_a_rebalance():
    """Why the worker commits with commit_in_thread: Faust's driver crashes its consumer thread."""
    from aiokafka import TopicPartition
    from aiokafka.errors import IllegalStateError
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    refusal = IllegalStateError("Partition t.moves-0 is not assigned")
    thread = _ConsumerThread(_Consumer({TopicPartition("t.moves", 0)}, refusal))
    assert await AIOKafkaConsumerThread._commit(thread, {TP("t.moves", 0): 5}) is False
    assert thread.crashed is refusal


async def test_a_commit_covers_the_partitions_still_assigned_and_notes_when():
    from aiokafka import TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    consumer = _Consumer({TopicPartition("t.moves", 0), TopicPartition("t.moves", 2)})
    thread = _ConsumerThread(consumer)
    offsets = {TP("t.moves", 0): 5, TP("t.moves", 1): 9, TP("t.moves", 2): 7}
    assert await faust_group.commit_in_thread(thread, offsets) is True
    assert consumer.committed == {
        TopicPartition("t.moves", 0): OffsetAndMetadata(5, ""),
        TopicPartition("t.moves", 2): OffsetAndMetadata(7, ""),
    }
    assert set(thread.tp_last_committed_at) == {TP("t.moves", 0), TP("t.moves", 2)}
    consumer.committed.clear()
    assert await faust_group.commit_in_thread(thread, {TP("t.moves", 1): 9}) is False
    assert consumer.committed == {}


@pytest.mark.parametrize(
    "refusal",
    ["IllegalStateError", "CommitFailedError", "UnknownMemberIdError", "NotCoordinatorForGroupError", "UnknownError"],
)
async def test_a_commit_refused_around_a_rebalance_is_not_made_and_the_worker_goes_on(refusal, caplog):
    import aiokafka.errors
    from aiokafka import TopicPartition

    thread = _ConsumerThread(_Consumer({TopicPartition("t.moves", 0)}, getattr(aiokafka.errors, refusal)()))
    with caplog.at_level(logging.INFO, logger="plylog.rules"):
        assert await faust_group.commit_in_thread(thread, {TP("t.moves", 0): 5}) is False
    assert thread.crashed is None and thread.tp_last_committed_at == {}
    assert any("offsets not committed" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("refusal", ["GroupAuthorizationFailedError", "TopicAuthorizationFailedError"])
async def test_a_commit_the_acls_refuse_still_stops_the_worker(refusal):
    import aiokafka.errors
    from aiokafka import TopicPartition

    error = getattr(aiokafka.errors, refusal)()
    thread = _ConsumerThread(_Consumer({TopicPartition("t.moves", 0)}, error))
    with pytest.raises(type(error)):
        await faust_group.commit_in_thread(thread, {TP("t.moves", 0): 5})


async def test_the_group_commits_in_the_consumer_thread_and_forgets_acks_only_when_committed():
    from aiokafka import TopicPartition
    from aiokafka.errors import IllegalStateError

    moves = TP("t.moves", 0)

    class Consumer:
        _committed_offset = {moves: None}
        _acked = {moves: [3, 4]}
        _acked_index = {moves: {3, 4}}
        _gap: dict = {}

    class App:
        consumer = Consumer()

    refused = _Consumer({TopicPartition("t.moves", 0)}, IllegalStateError("not assigned"))
    App.consumer._thread = _ConsumerThread(refused)
    assert await faust_group.FaustGroup(App(), "t.moves").commit({0: 4}) is False
    assert App.consumer._acked == {moves: [3, 4]}
    App.consumer._thread = _ConsumerThread(_Consumer({TopicPartition("t.moves", 0)}))
    assert await faust_group.FaustGroup(App(), "t.moves").commit({0: 4}) is True
    assert App.consumer._acked == {moves: [4]} and App.consumer._committed_offset == {moves: 4}
