"""Producing from an event loop: each record acknowledged by every in-sync replica (acks=all),
idempotent, keyed so that Kafka's default partitioner (services.common.kafka_partition) puts it on
its match's home partition. aiokafka, in the caller's event loop (docs/decisions/kafka-layer.md).
Part of the Kafka layer: the gateway's submitter and the bot service write their moves with it."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiokafka import AIOKafkaProducer

from . import kafka_auth
from .kafka_auth import KafkaAuth

log = logging.getLogger("plylog.kafka.produce")


class ProduceFailed(Exception):
    """The record was not acknowledged (the broker unreachable, too few replicas, a timeout, ...)."""


class Producer:
    def __init__(self, producer: AIOKafkaProducer, bootstrap: str):
        self._producer, self._bootstrap = producer, bootstrap

    @classmethod
    async def start(
        cls,
        bootstrap: str,
        auth: KafkaAuth | None,
        *,
        linger_ms: int = 0,
        request_timeout_s: float = 40.0,
        retry_for_s: float = 0.0,
    ) -> Producer:
        """A started producer. `linger_ms` 0: a lone record goes out at once (under load records
        still batch, behind the one request in flight per broker); `retry_for_s`: how long to retry
        while the broker does not answer yet (e.g. right after `plylog up`)."""
        deadline = asyncio.get_running_loop().time() + retry_for_s
        while True:
            producer = AIOKafkaProducer(
                bootstrap_servers=bootstrap,
                acks="all",
                linger_ms=linger_ms,
                enable_idempotence=True,
                request_timeout_ms=int(request_timeout_s * 1000),
                **kafka_auth.aiokafka(auth),
            )
            try:
                await producer.start()
                return cls(producer, bootstrap)
            except Exception as error:
                with contextlib.suppress(Exception):
                    await producer.stop()
                if asyncio.get_running_loop().time() >= deadline:
                    raise ProduceFailed(f"cannot connect to Kafka at {bootstrap}: {error}") from error
                log.warning("Kafka at %s not reachable yet (%s); retrying", bootstrap, error)
                await asyncio.sleep(1.0)

    async def send(self, topic: str, value: bytes | None, key: bytes) -> None:
        """Write one record (value None: a tombstone, on a compacted topic) and wait for its
        acknowledgement; ProduceFailed names why it was not."""
        try:
            await self._producer.send_and_wait(topic, value, key=key)
        except Exception as error:
            raise ProduceFailed(f"{type(error).__name__}: {error}") from error

    async def partitions(self, topic: str) -> int | None:
        """The topic's partition count as the cluster's metadata has it (None: not there)."""
        found = await self._producer.partitions_for(topic)
        return len(found) if found else None

    async def ping(self) -> None:
        """Raises unless the cluster answers a metadata request."""
        await self._producer.client.fetch_all_metadata()

    async def stop(self) -> None:
        """Flush what is pending, then close (errors on the way out are not the caller's)."""
        with contextlib.suppress(Exception):
            await self._producer.stop()
