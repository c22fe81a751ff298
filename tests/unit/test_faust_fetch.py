"""Workaround 9 (services/rules/faust_adapter/fetch.py): a changelog record fetched before its partition
was seeked does not reach Faust; the worker's consumer long-polls as bounded and hands over at most
a batch a poll. What in Faust and aiokafka makes it necessary: docs/decisions/faust-seek-drops.md
(the versions tested: services/rules/faust_adapter/versions.py)."""

from __future__ import annotations

import asyncio

from faust.types import TP

from services.rules.faust_adapter import fetch as faust_fetch
from tests.unit.test_rules_batching import CHANGELOG, FakeConsumer, _Flag, messages

OTHER = TP(CHANGELOG.topic, 1)


class FakeFetcher:
    """aiokafka's Fetcher as count_seeks sees it: seek_to and fetched_records."""

    def __init__(self) -> None:
        self.positions, self.next_batch = {}, {}

    def seek_to(self, tp, offset):
        self.positions[tp] = offset

    async def fetched_records(self, partitions, timeout=0, max_records=None):
        batch, self.next_batch = self.next_batch, {}
        return batch


def counting_fetcher() -> FakeFetcher:
    fetcher = FakeFetcher()
    faust_fetch.count_seeks(fetcher)
    return fetcher


def with_fetcher(consumer, fetcher):
    consumer._thread = type("Thread", (), {"_consumer": type("Aio", (), {"_fetcher": fetcher})()})()
    return consumer


def test_a_batch_is_from_before_a_seek_of_its_partition_only():
    fetcher = counting_fetcher()
    consumer = with_fetcher(type("Consumer", (), {})(), fetcher)
    fetcher.next_batch = {CHANGELOG: ["r"], OTHER: ["r"]}
    asyncio.run(fetcher.fetched_records({CHANGELOG, OTHER}))
    stale = faust_fetch.fetched_before_a_seek(consumer)
    assert not stale(CHANGELOG) and not stale(OTHER)
    fetcher.seek_to(CHANGELOG, 0)
    assert fetcher.positions == {CHANGELOG: 0}  # aiokafka's seek still happens
    assert stale(CHANGELOG) and not stale(OTHER)
    fetcher.next_batch = {CHANGELOG: ["r"]}
    asyncio.run(fetcher.fetched_records({CHANGELOG}))
    assert not faust_fetch.fetched_before_a_seek(consumer)(CHANGELOG)  # fetched from the new position


def test_without_a_counting_fetcher_nothing_is_stale():
    assert not faust_fetch.fetched_before_a_seek(type("Consumer", (), {})())(CHANGELOG)


def test_the_drain_drops_changelog_records_fetched_before_their_partition_was_seeked():
    """The race of the cluster scaling test: records of a changelog partition fetched (as a
    standby, or by the pass before) reached Faust after a recovery seeked the partition back to
    its start; counted as read, they made the recovery skip everything before them."""
    old = messages(3, tp=CHANGELOG, first=936)
    kept = messages(2, tp=OTHER, first=40)
    consumer = FakeConsumer([(m.tp, m) for m in old + kept], {CHANGELOG: None, OTHER: None})
    fetcher = counting_fetcher()
    fetcher.next_batch = {CHANGELOG: old, OTHER: kept}
    asyncio.run(fetcher.fetched_records({CHANGELOG, OTHER}))
    fetcher.seek_to(CHANGELOG, 0)  # the recovery seeks after the fetch, before the drain delivers
    with_fetcher(consumer, fetcher)

    class Fetcher:
        _stopped = _Flag()

    async def drain_once():
        task = asyncio.ensure_future(consumer._drain_messages(Fetcher()))
        while consumer.races == 0:
            await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        consumer._stopped.stopped = True
        await asyncio.wait_for(task, 5)

    asyncio.run(drain_once())
    assert consumer.called_back == kept  # the 3 records fetched before the seek are dropped
    assert consumer._read_offset == {CHANGELOG: None, OTHER: 41}  # the seek's position stands


def test_the_worker_consumer_faust_creates_counts_seeks(monkeypatch):
    """bound_fetch_long_poll's consumer class (the one Faust's driver creates) is a counting one."""
    import faust.transport.drivers.aiokafka as driver

    monkeypatch.setattr(driver, "aiokafka", driver.aiokafka)  # restored after the test
    faust_fetch.bound_fetch_long_poll(50)
    assert issubclass(driver.aiokafka.AIOKafkaConsumer, faust_fetch.SeekCountingConsumer)


def test_the_worker_consumer_hands_over_at_most_a_batch_of_records_a_poll(monkeypatch, tmp_path):
    """Uncapped, one of Faust's polls handed the worker everything aiokafka had fetched (~48,000
    moves of a backlog, held as messages and walked by the cyclic collector: ~18 % of its CPU)."""
    import faust.transport.drivers.aiokafka as driver

    from services.common.settings import load
    from services.rules.app import create_app

    monkeypatch.setattr(driver, "aiokafka", driver.aiokafka)  # create_app bounds the long-poll; restored
    monkeypatch.setenv("PLYLOG_DATA_DIR", str(tmp_path))

    async def worker_consumer_cap() -> int:
        app = create_app(load(), 12)
        consumer = app.consumer._thread._create_worker_consumer(app.transport)
        await consumer.stop()
        return consumer._max_poll_records

    assert asyncio.run(worker_consumer_cap()) == load().rules.batch_max
