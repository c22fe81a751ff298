"""The latency floor: the design's hops and nothing else, for the `floor` scenario.

A move's way to its view is produce -> `plylog.moves` -> rules worker -> `plylog.results` ->
projector -> Redis (view written, `{p}live:<id>` published). These two processes keep every hop
and do no work at any of them, with the fastest client here (librdkafka, which fetches every
partition whatever it holds, so nothing waits out a long-poll) and no batching window, linger or
acknowledgement wait of their own:

    python -m bench.hops relay   --source MOVES --target RESULTS --partitions N
        every record, bytes untouched, to the same partition of RESULTS (acks=all, linger 0,
        sent at once, acknowledgements not awaited before the next poll)
    python -m bench.hops faust-relay --source MOVES --target RESULTS --partitions N
        the same relay as a Faust app on the rules worker's fetch path (uvloop, its bounded
        long-poll, its batch delivery; acks=all, no linger): Faust's own share, no rules
    python -m bench.hops publish --source RESULTS --partitions N --redis-prefix P
        every record: SET `{P}floor:<key>` to it and PUBLISH it on `{P}live:<key>` (one pipeline
        per poll, as the projector writes a poll's results in one script call)

The latency bots' observers see a relayed move as its result (its bytes carry its event id), so
the `latency` scenario's load and measures apply unchanged. What the floor shows: the latency a
move cannot go under on this machine however lean the worker and the projector were, measured
beside boardgame.io's in the same run (`plylog bench floor peer`).

Ready (creates $PLYLOG_READY_FILE) after its first poll.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from pathlib import Path

import confluent_kafka

from services.common import kafka_auth, redis_client
from services.common.kafka_auth import KafkaAuth
from services.common.kafka_fetch import take_fetched
from services.projector.consumer import config as consumer_config

POLL_MOST = 500
POLL_WAIT_S = 0.05

log = logging.getLogger("plylog.bench.hops")


def consumer(bootstrap: str, topic: str, partitions: int, name: str) -> confluent_kafka.Consumer:
    """A consumer of every partition of `topic` from its beginning, set as the projector's is
    (its 50 ms long-poll bounds only an idle poll: librdkafka fetches every partition at once)."""
    taker = confluent_kafka.Consumer(consumer_config(bootstrap, instance=f"plylog-bench-{name}"))
    taker.assign(
        [confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(partitions)]
    )
    return taker


def relay(bootstrap: str, source: str, target: str, partitions: int, stop: threading.Event) -> int:
    taker = consumer(bootstrap, source, partitions, "relay")
    sender = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "client.id": "plylog-bench-relay",
            **kafka_auth.librdkafka(KafkaAuth.from_env()),
        }
    )
    copied = 0
    try:
        while not stop.is_set():
            for message in _take(taker):
                if message.error() is None:
                    sender.produce(target, message.value(), message.key(), partition=message.partition())
                    copied += 1
            sender.poll(0)  # delivery reports; never waited for before the next poll
        sender.flush(10)
    finally:
        taker.close()
    return copied


def publish(bootstrap: str, redis_url: str, source: str, partitions: int, prefix: str, stop: threading.Event) -> int:
    taker = consumer(bootstrap, source, partitions, "publish")
    client = redis_client.connect(redis_url)
    published = 0
    try:
        while not stop.is_set():
            fetched = [m for m in _take(taker) if m.error() is None]
            if not fetched:
                continue
            pipe = client.pipeline(transaction=False)
            for message in fetched:
                key = (message.key() or b"").decode(errors="replace")
                pipe.set(f"{prefix}floor:{key}", message.value())
                pipe.publish(f"{prefix}live:{key}", message.value())
            pipe.execute()
            published += len(fetched)
    finally:
        taker.close()
        client.close()
    return published


def faust_relay(bootstrap: str, source: str, target: str, partitions: int, name: str) -> int:
    """The relay as a Faust app on the rules worker's own fetch path and nothing else: uvloop, its
    bounded fetch long-poll and its batch delivery past Faust's per-event stream (the worker's Faust
    adapter, workarounds 1 and 7), each record sent at once through Faust's producer (acks=all, no linger): what
    the framework the rules worker stands on costs a move before any rule, state or changelog.
    Returns the worker's exit code."""
    import mode.loop

    mode.loop.use("uvloop")
    import faust
    from faust.worker import Worker

    from services.common.settings import RulesSettings
    from services.rules.faust_adapter.fetch import install_fetch_path

    app = faust.App(
        name,
        broker=f"kafka://{bootstrap}",
        store="memory://",
        web_enabled=False,
        producer_linger=0.0,
        producer_acks=-1,
        consumer_auto_offset_reset="earliest",
        topic_partitions=partitions,
        datadir=os.environ.get("PLYLOG_DATA_DIR") or f"/tmp/{name}",
    )
    moves = app.topic(
        source, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw", partitions=partitions
    )

    async def forward(messages: list) -> None:
        for message in messages:
            await app.producer.send(target, message.key, message.value, message.partition, None, None)

    install_fetch_path(app, source, forward, RulesSettings.from_env(os.environ).fetch_max_wait_ms)

    @app.agent(moves)
    async def subscribed(stream):  # keeps the topic subscribed; its records go to `forward`
        async for _ in stream:
            pass

    @app.on_rebalance_complete.connect
    async def ready(sender, **_):
        _mark_ready()

    return Worker(app, loglevel="warning", quiet=True).execute_from_commandline() or 0


def _take(taker: confluent_kafka.Consumer) -> list:
    """What is fetched, waiting a moment for a first record. After the first poll the process is
    ready: its consumer is connected, and it reads every partition from its beginning anyway."""
    fetched = take_fetched(taker, POLL_MOST, POLL_WAIT_S)
    _mark_ready()
    return fetched


_ready_file = os.environ.get("PLYLOG_READY_FILE")


def _mark_ready() -> None:
    """Create $PLYLOG_READY_FILE, once."""
    global _ready_file
    if _ready_file:
        Path(_ready_file).touch()
        _ready_file = None


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hops", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("role", choices=("relay", "faust-relay", "publish"))
    parser.add_argument("--source", required=True)
    parser.add_argument("--target", help="relay: the topic to copy to")
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--redis-prefix", default="", help="publish: the key prefix of the run")
    args = parser.parse_args()
    if args.role in ("relay", "faust-relay") and not args.target:
        parser.error(f"{args.role} needs --target")
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(message)s")
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    if args.role == "faust-relay":  # Faust handles its own signals
        # its group and its leader topic are named after the source (a run's topics are deleted with it)
        raise SystemExit(
            faust_relay(bootstrap, args.source, args.target, args.partitions, f"{args.source}-faust-relay")
        )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.role == "relay":
        done = relay(bootstrap, args.source, args.target, args.partitions, stop)
    else:
        done = publish(
            bootstrap,
            os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
            args.source,
            args.partitions,
            args.redis_prefix,
            stop,
        )
    log.info("%s stopped after %d records", args.role, done)


if __name__ == "__main__":
    main()
