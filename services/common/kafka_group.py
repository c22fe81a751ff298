"""Reading a topic as one member of a consumer group: the group spreads the topic's partitions over
its members, and each commits the offsets it is done with itself (nothing is committed for it).
aiokafka, in the caller's event loop (docs/decisions/kafka-layer.md). Part of the Kafka layer: the
bot service reads `plylog.results` with it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from . import kafka_auth
from .kafka_auth import KafkaAuth
from .kafka_read import Record

Assigned = Callable[[set[int]], None]
Revoked = Callable[[set[int]], Awaitable[None]]


class _Listener(ConsumerRebalanceListener):
    def __init__(self, on_assigned: Assigned, on_revoked: Revoked):
        self._on_assigned, self._on_revoked = on_assigned, on_revoked

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self._on_revoked({tp.partition for tp in revoked})

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self._on_assigned({tp.partition for tp in assigned})


class GroupMember:
    def __init__(
        self,
        bootstrap: str,
        auth: KafkaAuth | None,
        topic: str,
        group: str,
        client_id: str,
        on_assigned: Assigned,
        on_revoked: Revoked,
        *,
        fetch_max_wait_ms: int = 50,
        max_poll_interval_s: float = 600.0,
    ):
        """`on_revoked(partitions)` runs before the partitions go (commit what is done there);
        `on_assigned(partitions)` once new ones are this member's. A partition without a committed
        offset is read from its beginning."""
        self._topic = topic
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=fetch_max_wait_ms,
            max_poll_interval_ms=int(max_poll_interval_s * 1000),
            **kafka_auth.aiokafka(auth),
        )
        self._consumer.subscribe([topic], listener=_Listener(on_assigned, on_revoked))

    async def start(self) -> None:
        await self._consumer.start()

    async def take(self, most: int, timeout_s: float) -> list[Record]:
        """Up to `most` records of this member's partitions, waited for up to `timeout_s`."""
        polled = await self._consumer.getmany(timeout_ms=int(timeout_s * 1000), max_records=most)
        return [
            Record(tp.partition, message.offset, message.key, message.value)
            for tp, messages in polled.items()
            for message in messages
        ]

    async def commit(self, positions: dict[int, int]) -> None:
        """Commit, per partition, the offset of the next record to read."""
        await self._consumer.commit({TopicPartition(self._topic, p): offset for p, offset in positions.items()})

    async def stop(self) -> None:
        await self._consumer.stop()
