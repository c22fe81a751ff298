"""Reading every partition of some topics from offsets the caller keeps (no consumer group, nothing
committed to Kafka): the notifier keeps its offsets in Redis, written in the same script as the
outbox entries they cover (docs/decisions/notifier-exactly-once.md). aiokafka, in the caller's
event loop. Part of the Kafka layer (docs/decisions/kafka-layer.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition

from . import kafka_admin, kafka_auth
from .kafka_auth import KafkaAuth


class AssignedReader:
    def __init__(self, bootstrap: str, auth: KafkaAuth | None, client_id: str, *, fetch_max_wait_ms: int = 100):
        self._bootstrap, self._auth = bootstrap, auth
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=fetch_max_wait_ms,
            **kafka_auth.aiokafka(auth),
        )

    async def start(self, topics: list[str], offsets: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Assign every partition of `topics`: each from its offset in `offsets`, one missing there from
        the topic's end as it is now. Returns where each partition starts."""
        await self._consumer.start()
        # asked of the brokers (the admin client), not of the consumer's metadata: that may predate
        # a topic made just before, and refreshing it is not public API
        counts = await asyncio.to_thread(kafka_admin.partition_counts, self._bootstrap, topics, auth=self._auth)
        partitions = []
        for topic in topics:
            count = counts.get(topic)
            if not count:
                raise LookupError(f"topic {topic!r} does not exist (`plylog up` creates it)")
            partitions += [TopicPartition(topic, p) for p in range(count)]
        self._consumer.assign(partitions)
        ends = await self._consumer.end_offsets(partitions)
        starts = {}
        for tp in partitions:
            offset = offsets.get((tp.topic, tp.partition), ends[tp])
            self._consumer.seek(tp, offset)
            starts[(tp.topic, tp.partition)] = offset
        return starts

    async def take(self, most: int, timeout_s: float) -> list[tuple[str, int, int, bytes | None]]:
        """Up to `most` records as (topic, partition, offset, value), waited for up to `timeout_s`."""
        polled = await self._consumer.getmany(timeout_ms=int(timeout_s * 1000), max_records=most)
        return [(tp.topic, tp.partition, m.offset, m.value) for tp, messages in polled.items() for m in messages]

    async def stop(self) -> None:
        await self._consumer.stop()
