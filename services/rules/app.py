"""The rules worker: a Faust app with one agent over `plylog.moves` and a table of match states.

Per batch (`take_events`, agent concurrency 1): fold every record, produce its result (and
outcome or dead letter) to the record's own partition number, wait until Kafka acknowledged
them all, then store the changed states and the partition's position in the table. Offsets are
committed only up to the stored positions, after the changelog is flushed, so:
- crash before the states are stored: the records come again and are folded again from the
  old state, giving the same result bytes (a repeat, never a gap);
- crash after: the records are at or below the stored position (or the match's own stored
  offset) and are skipped; their results are already on the topic.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import faust
import orjson
from faust.types import TP
from mode import CrashingSupervisor

from services.common.settings import Settings, env_number

from .core import Counters, Incoming, Outgoing, RulesCore, position_key, read_position, rejected_by_code
from .faust_fixes import MatchTable, TableManager, bound_fetch_long_poll, commit_only_stored_positions, fetch_again
from .ops import install as install_ops
from .produce import produce_all

log = logging.getLogger("plylog.rules")

BATCH_MAX = env_number(os.environ, "PLYLOG_RULES_BATCH", 500, lo=1)
BATCH_WITHIN_S = env_number(os.environ, "PLYLOG_RULES_BATCH_WITHIN_S", 0.01, lo=0)
FETCH_MAX_WAIT_MS = env_number(os.environ, "PLYLOG_RULES_FETCH_WAIT_MS", 50, lo=0)
# How long a batch's records are retried while Kafka refuses them (no leader, too few in-sync
# replicas) before the batch fails and the worker stops (a restart answers the batch again).
PRODUCE_TIMEOUT_S = env_number(os.environ, "PLYLOG_RULES_PRODUCE_TIMEOUT_S", 60.0, lo=1)


def create_app(settings: Settings, partitions: int, worker_name: str = "rules-1") -> faust.App:
    topics = settings.topics
    datadir = Path(os.environ.get("PLYLOG_DATA_DIR") or settings.home / "rules" / worker_name)
    datadir.mkdir(parents=True, exist_ok=True)
    bound_fetch_long_poll(FETCH_MAX_WAIT_MS)
    app = faust.App(
        f"{topics.prefix}rules",
        broker=[f"kafka://{server}" for server in settings.kafka_servers],
        store="memory://",
        processing_guarantee="at_least_once",
        topic_partitions=partitions,
        topic_replication_factor=settings.replication_factor,  # the changelog's (3 on a cluster)
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        datadir=str(datadir),
        producer_linger_ms=2,
        producer_max_batch_size=256 * 1024,
        producer_acks=-1,
        producer_request_timeout=PRODUCE_TIMEOUT_S,
        broker_commit_interval=1.0,
        # A restarted worker takes back its own partitions at once (static membership);
        # a worker that is gone for good is replaced after the session timeout.
        consumer_group_instance_id=f"{topics.prefix}{worker_name}",
        broker_session_timeout=10.0,
        broker_heartbeat_interval=2.0,
        table_standby_replicas=1,
        TableManager=TableManager,
    )
    moves = app.topic(topics.moves, key_type=bytes, value_type=bytes, key_serializer="raw",
                      value_serializer="raw", partitions=partitions, internal=False)
    raw = faust.Schema(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
    table = app.tables.add(MatchTable(app, name="matches", default=None, partitions=partitions,
                                      beacon=app.tables.beacon, schema=raw, key_type=bytes, value_type=bytes,
                                      help="match states (JSON) by match id"))
    outputs = {"results": topics.results, "outcomes": topics.outcomes, "deadletter": topics.deadletter}
    core = RulesCore(partitions)
    counters = Counters()

    @app.on_partitions_assigned.connect
    async def log_assignment(sender, assigned, **_):
        owned = sorted(tp.partition for tp in sender.consumer.assignment() if tp.topic == topics.moves)
        log.info("assigned partitions of %s: %s", topics.moves, owned)

    @app.on_rebalance_complete.connect
    async def mark_ready(sender, **_):
        positions = {tp.partition: read_position(table.get(position_key(tp.partition)))
                     for tp in sender.consumer.assignment() if tp.topic == topics.moves}
        log.info("recovered; stored positions of %s: %s", topics.moves, dict(sorted(positions.items())))
        ready_file = os.environ.get("PLYLOG_READY_FILE")
        if ready_file:
            open(ready_file, "w").close()

    commit_only_stored_positions(app, table, topics.moves)
    install_ops(app, table, topics.moves, counters, settings, worker_name)  # /livez /readyz /metrics

    @app.timer(5.0)
    async def write_metrics():
        """The counters as JSON beside the worker's data, for `plylog status` and dashboards."""
        (datadir / "metrics.json").write_bytes(orjson.dumps({"worker": worker_name, **counters.as_dict()}))

    async def send(out: Outgoing):
        return await app.producer.send(outputs[out.kind], out.key, out.value, out.partition, None, None)

    # If a batch fails (say Kafka refuses the results), stop the worker: restarting only the
    # agent would let Faust ack the failed batch and read on past it; a restarted worker
    # resumes from its stored positions instead.
    @app.agent(moves, concurrency=1, name="fold_moves", supervisor_strategy=CrashingSupervisor)
    async def fold_moves(stream):
        async for events in stream.take_events(BATCH_MAX, within=BATCH_WITHIN_S):
            started = time.perf_counter()
            generation = app.consumer_generation_id
            owned = app.consumer.assignment()
            # Events fetched before a rebalance are refetched from our stored positions.
            incoming = [Incoming(e.key, e.value, e.message.partition, e.message.offset, e.message.topic)
                        for e in events if e.message.generation_id == generation and e.message.tp in owned]
            batch = core.fold_batch(incoming, table.get)
            batch.counts["replaced"] = await produce_all(send, batch.sends)  # acknowledged before anything is stored
            if app.consumer_generation_id != generation:
                log.warning("rebalanced during a batch: its states are not stored; the records will be "
                            "answered again from the stored positions (same results)")
                continue
            # States first, acknowledged, then positions: a position is never stored past a state
            # Kafka did not take (the records up to it would be skipped as answered).
            for key, (value, partition) in batch.state_writes().items():
                table.store(key, value, partition)
            await table.acknowledged()
            for key, (value, partition) in batch.position_writes().items():
                table.store(key, value, partition)
            for partition, offset in batch.rewind.items():
                await fetch_again(app, TP(topics.moves, partition), offset)
            took = time.perf_counter() - started
            counters.add(batch, took)
            log.info("batch %d: %d records, %d redelivered, %d accepted, %d duplicates, %d rejected, %d dead letters, "
                     "%d matches stored in %.1f ms; offsets %s", counters.batches, batch.counts["records"],
                     batch.counts["redelivered"], batch.counts["accepted"], batch.counts["duplicates"],
                     sum(rejected_by_code(batch.counts).values()),
                     batch.counts["deadletters"], batch.counts["states"], took * 1000, batch.describe_offsets())

    return app
