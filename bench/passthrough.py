"""The raw Kafka baseline: consume one topic and produce every record, bytes untouched, to the
same partition number of another, with the rules worker's client library and settings
(aiokafka; batches of up to 500 records or 10 ms; 1 MiB per partition per fetch; producer
acks=all, linger 2 ms, 256 KiB batches; produce, wait for the acks, then go on; commit every
second) and nothing else: no decoding, no rules, no state.

One setting differs: the fetch long-poll is 100 ms, not Faust's 1,500 ms. It does not change
batching (a fetch returns as soon as there is data), but aiokafka fetches the partitions it has
no buffered records of while it still holds some of others, so a partition that runs dry near
the end of a burst can wait for a whole long-poll: 1.5 s on a 1.5 s run (seen in the series).

    python -m bench.passthrough --source T1 --target T2 --group G

Ready (creates $PLYLOG_READY_FILE) once it has its partitions.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener

from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth

# The rules worker's settings (services/rules/app.py and Faust's defaults).
BATCH_MAX = 500
BATCH_WITHIN_MS = 10
COMMIT_INTERVAL_S = 1.0
FETCH_MAX_WAIT_MS = 100

log = logging.getLogger("plylog.bench.passthrough")


class MarkReady(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.path = os.environ.get("PLYLOG_READY_FILE")

    async def on_partitions_revoked(self, revoked) -> None:
        pass

    async def on_partitions_assigned(self, assigned) -> None:
        log.info("assigned partitions: %s", sorted(tp.partition for tp in assigned))
        if self.path:
            open(self.path, "w").close()


async def pass_through(bootstrap: str, source: str, target: str, group: str, stop: asyncio.Event) -> int:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=1024 * 1024,
        fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
        client_id="plylog-bench-passthrough",
        **kafka_auth.aiokafka(KafkaAuth.from_env()),
    )
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=2,
        max_batch_size=256 * 1024,
        client_id="plylog-bench-passthrough",
        **kafka_auth.aiokafka(KafkaAuth.from_env()),
    )
    consumer.subscribe([source], listener=MarkReady())
    await producer.start()
    await consumer.start()
    copied = 0
    committed_at = time.monotonic()
    try:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=BATCH_WITHIN_MS, max_records=BATCH_MAX)
            acks = [
                await producer.send(target, message.value, key=message.key, partition=message.partition)
                for messages in batches.values()
                for message in messages
            ]
            await asyncio.gather(*acks)
            copied += len(acks)
            if time.monotonic() - committed_at >= COMMIT_INTERVAL_S:
                await consumer.commit()
                committed_at = time.monotonic()
    finally:
        await consumer.stop()
        await producer.stop()
    return copied


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.passthrough", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--group", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(message)s")
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")

    async def run() -> None:
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        copied = await pass_through(bootstrap, args.source, args.target, args.group, stop)
        log.info("stopped after copying %d records", copied)

    asyncio.run(run())


if __name__ == "__main__":
    main()
