"""services/common's Kafka layer on the real broker: what the producer writes lands on the key's
home partition and reads back, by range and as a group, with nothing of a client library in sight."""

from __future__ import annotations

import asyncio

import pytest

from services.common import kafka_admin
from services.common.kafka_group import GroupMember
from services.common.kafka_partition import partition_of
from services.common.kafka_produce import ProduceFailed, Producer
from services.common.kafka_read import PartitionReader, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PARTITIONS = 3


@pytest.fixture
def topic(kafka_bootstrap, topic_prefix):
    name = topic_prefix + "layer"
    kafka_admin.create_topics(kafka_bootstrap, [kafka_admin.TopicSpec(name, PARTITIONS)])
    yield name
    kafka_admin.delete_topics(kafka_bootstrap, [name])


async def _produce(bootstrap: str, topic: str, keys: list[bytes]) -> None:
    producer = await Producer.start(bootstrap, None)
    try:
        assert await producer.partitions(topic) == PARTITIONS
        await producer.ping()
        for n, key in enumerate(keys):
            await producer.send(topic, b"v%d" % n, key)
    finally:
        await producer.stop()


def test_what_is_produced_is_on_its_home_partition_and_reads_back_by_range(kafka_bootstrap, topic):
    """Given records produced for six keys, then each is on its key's home partition, in order;
    a reader started at an offset of a partition takes from there, and its position ends at the
    partition's end."""
    keys = [b"m-%d" % n for n in range(6)] * 2
    asyncio.run(_produce(kafka_bootstrap, topic, keys))
    records = read_topic(kafka_bootstrap, topic)
    assert len(records) == len(keys)
    assert all(r.partition == partition_of(r.key, PARTITIONS) for r in records)
    home = partition_of(b"m-0", PARTITIONS)
    with PartitionReader(kafka_bootstrap) as reader:
        assert reader.partitions(topic) == PARTITIONS
        end = reader.end(topic, home)
        assert end == sum(1 for r in records if r.partition == home) >= 2
        reader.start(topic, home, 1)
        taken, position = [], 1
        while position < end:
            batch, position = reader.take(100, 5.0)
            taken.extend(batch)
        assert [(r.offset, r.value) for r in taken] == [(r.offset, r.value) for r in records if r.partition == home][1:]
        assert reader.offset_at(topic, home, 0) == 0


def test_a_group_member_reads_every_partition_and_resumes_after_its_commit(kafka_bootstrap, topic, topic_prefix):
    """Given records on every partition, a group's member is assigned them all and reads them; after
    it commits the offsets past two partitions only, the next member of the group reads just the
    third partition's records again."""
    keys = [b"k-%d" % n for n in range(12)]
    asyncio.run(_produce(kafka_bootstrap, topic, keys))
    group = topic_prefix + "group"

    async def member(commit_all_but: int | None) -> tuple[list, set[int]]:
        assigned: set[int] = set()

        async def revoked(partitions: set[int]) -> None:
            assigned.difference_update(partitions)

        reading = GroupMember(kafka_bootstrap, None, topic, group, "test", assigned.update, revoked)
        await reading.start()
        try:
            records: list = []
            for _ in range(100):
                records.extend(await reading.take(100, 0.5))
                if len(records) >= len(keys) or (commit_all_but is None and records):
                    break
            if commit_all_but is not None:
                ends = {}
                for record in records:
                    ends[record.partition] = record.offset + 1
                await reading.commit({p: end for p, end in ends.items() if p != commit_all_but})
            return records, set(assigned)
        finally:
            await reading.stop()

    first, assigned = asyncio.run(member(commit_all_but=2))
    assert assigned == set(range(PARTITIONS))
    assert sorted(r.key for r in first) == sorted(keys)
    again, _ = asyncio.run(member(commit_all_but=None))
    assert again and {r.partition for r in again} == {2}


def test_a_producer_that_cannot_reach_kafka_says_so():
    """Given no broker at the address, starting a producer fails with ProduceFailed naming it."""
    with pytest.raises(ProduceFailed, match=r"cannot connect to Kafka at 127\.0\.0\.1:9"):
        asyncio.run(Producer.start("127.0.0.1:9", None, request_timeout_s=2))
