"""The rules worker's Faust adapter (services/rules/faust_adapter/): each workaround does what it
says, and each test of Faust's own behaviour fails the day Faust changes it, so the workaround can
be dropped; the worker refuses a Faust or aiokafka it was not tested with. The fetch path's:
test_faust_fetch.py and test_rules_batching.py."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import faust
import pytest
from faust.tables.recovery import Recovery as FaustRecovery
from faust.types import TP

from services.rules.core import Stored, position_key, stored_offset
from services.rules.faust_adapter import fetch as faust_fetch
from services.rules.faust_adapter import producer as faust_producer
from services.rules.faust_adapter.recovery import Recovery, TableManager
from services.rules.faust_adapter.table import MatchTable


@dataclass
class _Message:
    value: bytes | None
    partition: int = 0
    offset: int = 0


@dataclass
class _Event:
    key: bytes
    message: _Message

    @property
    def value(self) -> bytes | None:
        return self.message.value


def changelog(key: bytes, value: bytes | None, partition: int = 0, offset: int = 0) -> _Event:
    return _Event(key, _Message(value, partition, offset))


@pytest.fixture
def app():
    app = faust.App("test-faust-fixes", store="memory://", web_enabled=False)
    app.finalize()
    return app


def state_value(offset: int, seq: int) -> bytes:
    """A table entry as Stored.encode writes it (abridged state)."""
    return b'{"offset":%d,"state":{"seq":%d}}' % (offset, seq)


def test_stored_offset_reads_match_entries_and_positions():
    assert stored_offset(state_value(1234, 7)) == 1234
    assert stored_offset(b"-1") == -1 and stored_offset(b"99") == 99


def test_a_stored_state_starts_with_its_offset_as_stored_offset_expects():
    from games.fold import Replayer
    from tests.support import record

    replayer = Replayer()
    replayer.feed(
        record(
            "m1",
            "alice",
            {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": {"layout": "small-4"}},
            0,
        )
    )
    assert stored_offset(Stored(replayer.states["m1"], 4321).encode()) == 4321


def test_faust_recovery_is_last_write_wins(app):
    """Why MatchTable overrides it: Faust applies the changelog in order, so a late older write wins."""
    table = faust.Table(app, name="plain", default=None, key_type=bytes, value_type=bytes)
    table.apply_changelog_batch([changelog(b"m1", state_value(20, 3)), changelog(b"m1", state_value(10, 2))])
    assert table.data[b"m1"] == state_value(10, 2)


def test_recovery_keeps_the_value_written_for_the_highest_moves_offset(app):
    table = MatchTable(app, name="matches", default=None, key_type=bytes, value_type=bytes)
    table.apply_changelog_batch(
        [
            changelog(b"m1", state_value(10, 2)),
            changelog(b"m1", state_value(20, 3)),
            changelog(b"m1", state_value(15, 2)),  # a paused worker's late write
            changelog(position_key(0), b"20"),
            changelog(position_key(0), b"12"),
        ]
    )
    assert table.data[b"m1"] == state_value(20, 3) and table.data[position_key(0)] == b"20"
    table.apply_changelog_batch([changelog(b"m1", state_value(12, 2))])  # a later batch, same rule
    assert table.data[b"m1"] == state_value(20, 3)
    table.apply_changelog_batch([changelog(b"m1", state_value(30, 4))])
    assert table.data[b"m1"] == state_value(30, 4)


def test_a_recovery_says_how_many_changelog_records_it_read_from_which_offsets(app):
    """The line a recovery ends with: a recovery that skipped part of a partition shows it."""
    table = MatchTable(app, name="matches", default=None, key_type=bytes, value_type=bytes)
    table.apply_changelog_batch(
        [
            changelog(b"m1", state_value(1, 1), 0, 7),
            changelog(b"m2", state_value(2, 1), 3, 2),
            changelog(b"m1", state_value(3, 2), 0, 9),
        ]
    )
    table.apply_changelog_batch([changelog(b"m1", state_value(4, 3), 0, 5)])
    assert table.applied_since() == {0: (3, 5, 9), 3: (1, 2, 2)}
    assert table.applied_since() == {}


class _SeekRecorder:
    def __init__(self):
        self.seeks = None

    async def seek_wait(self, offsets):
        self.seeks = dict(offsets)


async def test_faust_seeks_a_partition_without_a_start_offset_to_none():
    """Why Recovery overrides `_seek_offsets`: aiokafka's seek raises ValueError on None."""
    consumer, tp = _SeekRecorder(), TP("t-changelog", 3)
    await FaustRecovery._seek_offsets(FaustRecovery.__new__(FaustRecovery), consumer, {tp}, {tp: None}, "standby")
    assert consumer.seeks == {tp: None}


async def test_recovery_reads_a_partition_without_a_start_offset_from_the_beginning():
    consumer, tp, built = _SeekRecorder(), TP("t-changelog", 3), TP("t-changelog", 4)
    await Recovery.__new__(Recovery)._seek_offsets(consumer, {tp, built}, {tp: None, built: 41}, "standby")
    assert consumer.seeks == {tp: 0, built: 41}


def test_the_table_manager_builds_the_fixed_recovery(app):
    manager = TableManager(app)
    assert type(manager.recovery) is Recovery


async def test_faust_still_hard_codes_the_fetch_long_poll(monkeypatch, tmp_path):
    """Why `bound_fetch_long_poll` exists: the consumer Faust's own driver makes long-polls 1.5 s."""
    import aiokafka
    import faust.transport.drivers.aiokafka as driver

    monkeypatch.setattr(driver, "aiokafka", aiokafka)  # Faust's driver as it comes
    app = faust.App("test-long-poll", broker="kafka://127.0.0.1:1", datadir=str(tmp_path), web_enabled=False)
    consumer = app.consumer._thread._create_worker_consumer(app.transport)
    await consumer.stop()
    assert consumer._fetch_max_wait_ms == 1500


async def test_the_bounded_long_poll_reaches_the_consumer_faust_creates(monkeypatch):
    import faust.transport.drivers.aiokafka as driver

    monkeypatch.setattr(driver, "aiokafka", driver.aiokafka)
    faust_fetch.bound_fetch_long_poll(50)
    consumer = driver.aiokafka.AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", fetch_max_wait_ms=1500)
    assert consumer._fetch_max_wait_ms == 50


async def test_faust_only_logs_a_changelog_write_kafka_refused(app):
    """Why MatchTable awaits its writes: Faust sets the error on the write's future and logs it;
    nothing else hears of it."""
    from faust.types import FutureMessage, PendingMessage

    topic = app.topic("t-changelog")
    failed = asyncio.get_running_loop().create_future()
    failed.set_exception(RuntimeError("request timed out"))
    message = FutureMessage(PendingMessage(topic, b"k", b"v", None, None, None, None, None, None))
    topic._on_published(failed, message, producer=app.producer, state=None)  # does not raise
    assert isinstance(message.exception(), RuntimeError)
    failed.exception()


class _Producer:
    """What MatchTable asks of Faust's producer: send() -> a delivery future, in call order."""

    def __init__(self, refuse_at: int | None = None, fail_at: int | None = None, hold: bool = False):
        self.sent: list[tuple] = []
        self.deliveries: list[asyncio.Future] = []
        self._refuse_at, self._fail_at, self._hold = refuse_at, fail_at, hold

    async def send(self, topic, key, value, partition, timestamp, headers):
        if len(self.sent) == self._refuse_at:
            raise RuntimeError("message too large")  # refused before Kafka saw it
        self.sent.append((topic, key, value, partition))
        delivery = asyncio.get_running_loop().create_future()
        if len(self.sent) - 1 == self._fail_at:
            delivery.set_exception(RuntimeError("request timed out"))
        elif not self._hold:  # held: Kafka answers when the test says
            delivery.set_result("ok")
        self.deliveries.append(delivery)
        return delivery


def _table(app, producer) -> MatchTable:
    app.producer = producer
    return MatchTable(app, name="matches", default=None, key_type=bytes, value_type=bytes)


async def test_changelog_writes_reach_the_producer_in_order_with_their_partitions(app):
    producer = _Producer()
    table = _table(app, producer)
    table.store(b"a", b"1", 3)
    table.store(b"b", b"2", 0)
    table.forget(b"a", 3)
    table.store(b"a", b"3", 3)  # a match created again under a forgotten id: after its tombstone
    assert table.get(b"a") == b"3" and table.get(b"b") == b"2"
    await table.acknowledged()
    topic = table.changelog_topic.get_topic_name()
    assert producer.sent == [
        (topic, b"a", b"1", 3),
        (topic, b"b", b"2", 0),
        (topic, b"a", None, 3),
        (topic, b"a", b"3", 3),
    ]


async def test_acknowledged_raises_the_first_changelog_write_kafka_refused(app):
    table = _table(app, _Producer(fail_at=1))
    for n in range(3):
        table.store(b"k%d" % n, b"v", 0)
    with pytest.raises(RuntimeError, match="timed out"):
        await table.acknowledged()
    await table.acknowledged()  # nothing left over


async def test_acknowledged_raises_a_changelog_write_refused_before_kafka_saw_it(app):
    table = _table(app, _Producer(refuse_at=1))
    table.store(b"k0", b"v", 0)
    table.store(b"k1", b"v" * 10, 0)
    with pytest.raises(RuntimeError, match="too large"):
        await table.acknowledged()


async def test_acknowledged_waits_for_writes_made_while_the_sender_was_busy(app):
    producer = _Producer()
    table = _table(app, producer)
    table.store(b"a", b"1", 0)
    await asyncio.sleep(0)  # the sender has started
    table.store(b"b", b"2", 1)
    await table.acknowledged()
    assert [key for _, key, _, _ in producer.sent] == [b"a", b"b"]
    assert all(delivery.done() for delivery in producer.deliveries)


async def test_two_waits_for_the_changelog_at_once_each_wait_for_every_write_they_saw(app):
    """The committer waits for its states while an offset commit waits for the positions it
    read: the second wait must not end before Kafka has the writes the first one waits for (it
    did: the first took them all in hand, and the commit ran ahead of what Kafka had)."""
    producer = _Producer(hold=True)
    table = _table(app, producer)
    table.store(b"a", b"1", 0)
    table.store(position_key(0), b"7", 0)
    await asyncio.sleep(0)  # the sender hands them to the producer
    committer = asyncio.ensure_future(table.acknowledged())
    await asyncio.sleep(0)
    commit = asyncio.ensure_future(table.acknowledged())
    await asyncio.sleep(0.01)
    assert not committer.done() and not commit.done()
    for delivery in producer.deliveries:
        delivery.set_result("ok")
    await asyncio.wait_for(asyncio.gather(committer, commit), 5)
    await table.acknowledged()  # nothing left over


def test_the_table_is_written_only_with_a_partition(app):
    table = _table(app, _Producer())
    with pytest.raises(RuntimeError, match="store"):
        table[b"k"] = b"v"
    with pytest.raises(RuntimeError, match="forget"):
        del table[b"k"]


def test_aiokafka_refuses_to_seek_to_none():
    """What stopped a worker when another joined during its recovery (Recovery above)."""
    import aiokafka

    consumer = aiokafka.AIOKafkaConsumer.__new__(aiokafka.AIOKafkaConsumer)
    with pytest.raises(ValueError, match="positive integer"):
        consumer.seek(TP("t-changelog", 3), None)


async def test_a_linger_set_per_batch_reaches_the_batches_aiokafka_opens_from_then_on():
    """Linger (workaround 8) sets what aiokafka's accumulator gives each batch it opens; a batch opened
    before keeps its own, a batch opened with no linger is ready at once."""
    import aiokafka
    from aiokafka.structs import TopicPartition

    producer = aiokafka.AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", linger_ms=0)
    app = type("App", (), {"producer": type("FaustProducer", (), {"_producer": producer})()})()
    linger = faust_producer.Linger(app)
    accumulator = producer._message_accumulator
    tp = TopicPartition("t", 0)
    at_once = accumulator._append_batch(accumulator.create_builder(), tp)
    linger.set(0.5)
    lingering = accumulator._append_batch(accumulator.create_builder(), tp)
    assert (at_once.remaining_linger(), lingering.remaining_linger() > 0.4) == (None, True)
    linger.set(0.0)
    assert accumulator._append_batch(accumulator.create_builder(), tp).remaining_linger() is None
    assert lingering.remaining_linger() > 0.4


def test_a_linger_waits_for_fausts_producer_to_start():
    app = type("App", (), {"producer": type("FaustProducer", (), {"_producer": None})()})()
    linger = faust_producer.Linger(app)
    linger.set(0.002)
    assert linger.seconds is None  # set again with the next batch


async def _recovery_of_a_rebalance(app, kind):
    """A recovery whose rebalance has assigned (on_rebalance ran), as Faust's app does it."""
    manager = TableManager(app)
    recovery = kind(app, manager, beacon=manager.beacon, loop=manager.loop)
    app.on_rebalance_start()
    await recovery.on_rebalance(set(), set(), set(), generation_id=app.consumer_generation_id)
    recovery.signal_recovery_start.clear()  # the pass has begun
    return recovery


async def test_faust_goes_on_with_a_recovery_pass_after_the_next_rebalance_has_revoked(app):
    """Why Recovery overrides `_wait`: Faust ends a pass only when the next assignment arrives
    (signal_recovery_start), so a pass goes on through the revocation and the join."""
    recovery = await _recovery_of_a_rebalance(app, FaustRecovery)
    app.on_rebalance_start()  # the next rebalance revokes
    await recovery._wait(asyncio.sleep(0))  # no RebalanceAgain: the pass goes on


async def test_a_recovery_pass_ends_when_the_next_rebalance_revokes(app):
    from faust.tables.recovery import RebalanceAgain

    recovery = await _recovery_of_a_rebalance(app, Recovery)
    await recovery._wait(asyncio.sleep(0))  # its own rebalance: the pass goes on
    app.on_rebalance_start()
    with pytest.raises(RebalanceAgain):
        await recovery._wait(asyncio.sleep(0))


async def test_a_partition_taken_over_is_read_from_its_built_start_whatever_was_counted_before(app):
    """A record of an earlier assignment counted as read (the leak the pass above prevents) is
    not where the reading of a partition taken over starts."""
    recovery = await _recovery_of_a_rebalance(app, Recovery)
    tp, kept = TP("t-changelog", 0), TP("t-changelog", 1)
    recovery._taken_over = frozenset({tp})

    class Consumer(_SeekRecorder):
        async def earliest_offsets(self, *tps):
            return {t: 0 for t in tps}

    consumer, offsets = Consumer(), {tp: 1500, kept: 900}  # `kept` stayed active: it is read on from 900
    await recovery._build_offsets(consumer, {tp, kept}, offsets, "active")
    assert offsets == {tp: -1, kept: 900}
    offsets[tp] = 1600  # counted while the seek was prepared
    await recovery._seek_offsets(consumer, {tp, kept}, offsets, "active")
    assert consumer.seeks == {tp: 0, kept: 900}


class _ChangelogTable:
    def persisted_offset(self, tp):
        return None


async def _assign(recovery, app, monkeypatch, actives):
    """A rebalance that makes `actives` this worker's active changelog partitions."""
    monkeypatch.setattr(app.assignor, "assigned_actives", lambda: set(actives))
    monkeypatch.setattr(app.assignor, "assigned_standbys", lambda: set())
    app.on_rebalance_start()
    await recovery.on_rebalance(set(), set(), set(), generation_id=app.consumer_generation_id)


async def test_a_partition_is_taken_over_until_a_recovery_of_it_completes(app, monkeypatch):
    """The cluster scaling test's rollback: a partition given away, then back in a pass cut short
    by the next rebalance, was counted as kept by the pass after (it had been active in the pass
    before) and read on from a record of another assignment."""

    async def completed(self, generation_id=0):
        return None

    monkeypatch.setattr(FaustRecovery, "on_recovery_completed", completed)
    recovery = await _recovery_of_a_rebalance(app, Recovery)
    p0, p1 = TP("t-changelog", 0), TP("t-changelog", 1)
    recovery.tables._changelogs["t-changelog"] = _ChangelogTable()
    await _assign(recovery, app, monkeypatch, {p0, p1})
    assert recovery._taken_over == {p0, p1}  # a worker starting takes every partition over
    await recovery.on_recovery_completed(app.consumer_generation_id)
    await _assign(recovery, app, monkeypatch, {p1})  # p0 goes to another worker
    assert recovery._taken_over == frozenset()
    await _assign(recovery, app, monkeypatch, {p0, p1})  # back, and this pass is cut short
    assert recovery._taken_over == {p0}
    await _assign(recovery, app, monkeypatch, {p0, p1})
    assert recovery._taken_over == {p0}  # still: no recovery of it completed here since
    await recovery.on_recovery_completed(app.consumer_generation_id)
    await _assign(recovery, app, monkeypatch, {p0, p1})
    assert recovery._taken_over == frozenset()


async def test_a_record_counted_while_the_seek_waits_is_forgotten_and_the_queue_cleared(app):
    """Faust's changelog reader goes on while the seek waits for the consumer's thread: a record
    queued before the seek and counted then would make the reading of a partition taken over
    skip what comes before it; the records still queued are from before the seek too."""
    recovery = await _recovery_of_a_rebalance(app, Recovery)
    tp = TP("t-changelog", 0)
    recovery._taken_over, recovery._reading_from = frozenset({tp}), {tp: -1}
    queue = recovery.tables.changelog_queue
    offsets = {tp: -1}

    class Consumer(_SeekRecorder):
        async def seek_wait(self, seeks):
            await super().seek_wait(seeks)
            offsets[tp] = 936  # the reader counts a record queued before the seek
            queue.put_nowait("a record of before the seek")

    consumer = Consumer()
    await recovery._seek_offsets(consumer, {tp}, offsets, "active")
    assert consumer.seeks == {tp: 0} and offsets == {tp: -1} and queue.empty()


def test_faust_clears_its_changelog_queue_when_the_flow_resumes(app):
    """What the early clear above relies on: it drops only what resuming would drop next."""
    queue = TableManager(app).changelog_queue
    queue.put_nowait("a record")
    app.flow_control.resume()
    assert queue.empty()


async def test_a_recovery_is_superseded_once_the_next_rebalance_begins(app):
    recovery = await _recovery_of_a_rebalance(app, Recovery)
    assert not recovery.superseded()
    app.on_rebalance_start()  # the next rebalance revokes: its assignment has not come yet
    assert recovery.superseded()
    await recovery.on_rebalance(set(), set(), set(), generation_id=app.consumer_generation_id)
    assert not recovery.superseded()  # the new assignment's recovery is the current one


async def test_a_recovery_of_an_older_generation_is_superseded(app):
    recovery = await _recovery_of_a_rebalance(app, Recovery)
    app.consumer_generation_id += 1  # a newer assignment, whose rebalance Faust has not told us of
    assert recovery.superseded()


def test_the_installed_faust_and_aiokafka_are_the_versions_the_workarounds_were_tested_with():
    """Fails the day either changes: go through the workarounds' decision records (each says what
    to check), run the integration, fault and cluster tests, then list the version as tested."""
    from services.rules.faust_adapter import versions

    assert versions.problem() is None, versions.problem()


def test_an_untested_version_is_refused_with_one_line_naming_it_and_the_tested_ones():
    from services.rules.faust_adapter import versions

    line = versions.problem({"faust-streaming": "0.16.0", "aiokafka": "0.14.0"})
    assert line is not None and "\n" not in line
    assert "faust-streaming 0.16.0" in line and "0.15.3" in line and "aiokafka 0.14.0 " not in line
    assert "aiokafka (not installed)" in versions.problem({"faust-streaming": "0.15.3", "aiokafka": None})


def test_the_worker_refuses_to_start_on_an_untested_version(monkeypatch, capsys):
    from services.rules import __main__ as worker
    from services.rules.faust_adapter import versions

    monkeypatch.setattr(versions, "_version", lambda name: "9.9.9")
    assert worker.main([]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "faust-streaming 9.9.9" in err and "aiokafka 9.9.9" in err
