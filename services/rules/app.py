"""The rules worker: a Faust app with one agent over `plylog.moves` and a table of match states.

Per batch (taken from batching.RecordBuffer, which the consumer fills a fetch at a time; agent
concurrency 1): fold every record, produce its result (and outcome or dead letter) to the
record's own partition number; a committer task waits until Kafka acknowledged them all, then
stores the changed states and the partition's position in the table, every queued batch
together, while the agent folds the next batches (at most pipeline.DEPTH in flight, reading the
states not stored yet from pipeline.Pending). Offsets are
committed only up to the stored positions, after the changelog is flushed, so:
- crash before the states are stored: the records come again and are folded again from the
  old state, giving the same result bytes (a repeat, never a gap);
- crash after: the records are at or below the stored position (or the match's own stored
  offset) and are skipped; their results are already on the topic.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import faust
import orjson
from faust.types import TP
from mode import CrashingSupervisor

from games.fold import FORGET_FINISHED_AFTER
from services.common import heap, kafka_auth
from services.common.settings import Settings, env_number

from . import stop_deadline
from .batching import RecordBuffer
from .core import BatchLines, Counters, Incoming, RulesCore, forgettable, position_key, read_position, rejected_by_code
from .faust_fetch import bound_fetch_long_poll, deliver_in_batches, fetch_again
from .faust_fixes import Linger, MatchTable, TableManager, commit_only_stored_positions
from .ops import install as install_ops
from .pipeline import DEPTH, Committer, InFlight, Pending, merged, put_or_fail, take_queued
from .produce import acknowledged, faust_send, produce_all, start

log = logging.getLogger("plylog.rules")

BATCH_MAX = env_number(os.environ, "PLYLOG_RULES_BATCH", 500, lo=1)
# How long a short batch waits for more records while they come together (batching.py; a lone
# move is folded at once: 2-3 ms less to a single client, while at 1,000 moves/s waiting gave a
# better p50, 194-211 ms against 228-237 ms). Short, since batches in flight keep the worker busy
# when records come faster than it folds them.
BATCH_WITHIN_S = env_number(os.environ, "PLYLOG_RULES_BATCH_WITHIN_S", 0.002, lo=0)
# Workers that keep a hot copy of each table partition (Faust standbys): a takeover recovers only
# what the standby has not read yet; each standby re-reads every changelog write of its partitions
# (the cost per move that appears with the second worker; `plylog bench scale` measures it).
STANDBY_REPLICAS = env_number(os.environ, "PLYLOG_RULES_STANDBY_REPLICAS", 1, lo=0, hi=8)
# The producer's linger while many moves come together (faust_fixes 8): from BUSY_RECORDS records
# in a batch and buffered behind it; fewer get none (a lone move, 1,000 moves/s: ~2 ms less p50).
BUSY_LINGER_S = env_number(os.environ, "PLYLOG_RULES_BUSY_LINGER_MS", 2, lo=0, hi=100) / 1000
BUSY_RECORDS = 32
# Move records read ahead of the fold (services/rules/batching.py): a backlog fills whole batches.
BUFFER_CAPACITY = 2 * BATCH_MAX
FETCH_MAX_WAIT_MS = env_number(os.environ, "PLYLOG_RULES_FETCH_WAIT_MS", 50, lo=0)
# How long a batch's records are retried while Kafka refuses them (no leader, too few in-sync
# replicas) before the batch fails and the worker stops (a restart answers the batch again).
PRODUCE_TIMEOUT_S = env_number(os.environ, "PLYLOG_RULES_PRODUCE_TIMEOUT_S", 60.0, lo=1)
# How long a worker whose batch failed may take to stop before it exits anyway (stop_deadline.py).
STOP_DEADLINE_S = env_number(os.environ, "PLYLOG_RULES_STOP_DEADLINE_S", 30.0, lo=1)
# How often the worker deletes the states of finished matches the fold has forgotten (core.forgettable).
SWEEP_INTERVAL_S = env_number(os.environ, "PLYLOG_RULES_SWEEP_INTERVAL_S", 10.0, lo=0.1)


def create_app(settings: Settings, partitions: int, worker_name: str = "rules-1") -> faust.App:
    topics = settings.topics
    datadir = Path(os.environ.get("PLYLOG_DATA_DIR") or settings.home / "rules" / worker_name)
    datadir.mkdir(parents=True, exist_ok=True)
    bound_fetch_long_poll(FETCH_MAX_WAIT_MS)
    app = faust.App(
        topics.rules_group,
        broker=[f"kafka://{server}" for server in settings.kafka_servers],
        broker_credentials=kafka_auth.faust(settings.kafka_auth),
        store="memory://",
        processing_guarantee="at_least_once",
        topic_partitions=partitions,
        topic_replication_factor=settings.replication_factor,  # the changelog's (3 on a cluster)
        consumer_auto_offset_reset="earliest",
        web_enabled=False,
        datadir=str(datadir),
        # no linger to start with: set per batch (faust_fixes 8, `linger` below)
        producer_linger=0.0,
        producer_max_batch_size=256 * 1024,
        producer_acks=-1,
        producer_request_timeout=PRODUCE_TIMEOUT_S,
        broker_commit_interval=1.0,
        # At most a batch of records a poll: uncapped, one poll handed over all that aiokafka had
        # fetched (1 MiB a partition: ~48,000 moves of a backlog), each made a Faust message at
        # once and held in the buffer, where the cyclic collector walked them again and again:
        # ~18 % of the worker's CPU, 80 ms full collections. Capped, the buffer's capacity holds.
        broker_max_poll_records=BATCH_MAX,
        # A restarted worker takes back its own partitions at once (static membership);
        # a worker that is gone for good is replaced after the session timeout.
        consumer_group_instance_id=f"{topics.prefix}{worker_name}",
        broker_session_timeout=10.0,
        broker_heartbeat_interval=2.0,
        table_standby_replicas=STANDBY_REPLICAS,
        TableManager=TableManager,
    )
    moves = app.topic(
        topics.moves,
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        partitions=partitions,
        internal=False,
    )
    raw = faust.Schema(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
    table = app.tables.add(
        MatchTable(
            app,
            name="matches",
            default=None,
            partitions=partitions,
            beacon=app.tables.beacon,
            schema=raw,
            key_type=bytes,
            value_type=bytes,
            help="match states (JSON) by match id",
        )
    )
    outputs = {"results": topics.results, "outcomes": topics.outcomes, "deadletter": topics.deadletter}
    core = RulesCore(partitions)
    counters = Counters()
    lines = BatchLines()
    linger = Linger(app)

    @app.on_partitions_assigned.connect
    async def log_assignment(sender, assigned, **_):
        owned = sorted(tp.partition for tp in sender.consumer.assignment() if tp.topic == topics.moves)
        log.info("assigned partitions of %s: %s", topics.moves, owned)

    @app.on_rebalance_complete.connect
    async def mark_ready(sender, **_):
        if sender.tables.recovery.superseded():
            log.info("a recovery pass the next rebalance overtook has ended; ready once the next one completes")
            return
        positions = {
            tp.partition: read_position(table.get(position_key(tp.partition)))
            for tp in sender.consumer.assignment()
            if tp.topic == topics.moves
        }
        log.info(
            "recovered; stored positions of %s: %s; changelog records read since the last recovery "
            "(partition: records, offsets): %s",
            topics.moves,
            dict(sorted(positions.items())),
            {p: f"{n}, {lo}-{hi}" for p, (n, lo, hi) in table.applied_since().items()} or "none",
        )
        heap.settle()  # recovered: what is here now lives as long as the worker (services/common/heap.py)
        ready_file = os.environ.get("PLYLOG_READY_FILE")
        if ready_file:
            open(ready_file, "w").close()

    commit_only_stored_positions(app, table, topics.moves)
    buffered = RecordBuffer(BATCH_MAX, BATCH_WITHIN_S, BUFFER_CAPACITY)
    deliver_in_batches(app, topics.moves, buffered.extend)  # move records skip Faust's per-event path
    install_ops(app, table, topics.moves, counters, settings, worker_name)  # /livez /readyz /metrics

    @app.timer(5.0)
    async def write_metrics():
        """The counters as JSON beside the worker's data, for `plylog status` and dashboards."""
        (datadir / "metrics.json").write_bytes(orjson.dumps({"worker": worker_name, **counters.as_dict()}))

    send = faust_send(lambda: app.producer, outputs)

    async def commit_batches(queue: asyncio.Queue, pending: Pending) -> None:
        """In batch order, every batch queued as one group: wait for the group's acknowledgements,
        store its states, wait for those, then its positions (see pipeline.py). Raises when Kafka
        refuses a batch."""
        while True:
            group = []
            for flight in await take_queued(queue):
                firsts = [out for out in flight.batch.sends if out.kind != "outcomes"]
                flight.batch.counts["replaced"] = await acknowledged(send, firsts, flight.deliveries)
                group.append(flight)
            # An outcome goes out only once its match's final result is acknowledged, so a projector
            # that sees it knows the result is on plylog.results before the end it reads there now
            # (the projector's check of outcomes, services/projector/runner.py).
            outcomes = [out for flight in group for out in flight.batch.sends if out.kind == "outcomes"]
            if outcomes:
                group[-1].batch.counts["replaced"] += await produce_all(send, outcomes)
            generation = app.consumer_generation_id
            current = [flight for flight in group if flight.generation == generation]
            for flight in group:
                if flight.generation != generation:
                    pending.settled(flight.number)  # not drop(): batches of the new generation may be pending
                    log.warning(
                        "rebalanced while batch %d was in flight: its states are not stored; the records will "
                        "be answered again from the stored positions (same results)",
                        flight.number,
                    )
            if not current:
                continue
            # States first, acknowledged, then positions: a position is never stored past a state
            # Kafka did not take (the records up to it would be skipped as answered).
            for key, (value, partition) in merged([flight.batch.state_writes() for flight in current]).items():
                table.store(key, value, partition)
            await table.acknowledged()
            for key, (value, partition) in merged([flight.batch.position_writes() for flight in current]).items():
                table.store(key, value, partition)
            for flight in current:
                pending.settled(flight.number)
                log_stored(flight, len(current))

    @app.timer(SWEEP_INTERVAL_S)
    async def forget_finished() -> None:
        """Delete the finished matches the fold has forgotten (by the stored positions of the
        partitions this worker owns). Any owner may delete such an entry at any time: it changes
        no answer. No await between the scan and the deletes, so no newer state of a key (a match
        created again under a forgotten id) can be stored in between and deleted; a failed delete
        only leaves an entry the fold forgets anyway (the tombstones are awaited with the next
        stored states)."""
        positions = {
            tp.partition: read_position(table.get(position_key(tp.partition)))
            for tp in app.consumer.assignment()
            if tp.topic == topics.moves
        }
        gone = forgettable(table.data.items(), positions)
        for key, partition in gone:
            table.forget(key, partition)
        if gone:
            counters.totals["forgotten"] += len(gone)
            log.info(
                "forgot %d finished matches (ended over %d records before their partition's position)",
                len(gone),
                FORGET_FINISHED_AFTER,
            )

    def log_stored(flight: InFlight, group: int) -> None:
        now = time.perf_counter()
        batch, took = flight.batch, now - flight.started
        counters.add(batch, took)
        if lines.notable(flight.number, batch.counts, now):
            level, quiet = logging.INFO, lines.since_last()
        elif log.isEnabledFor(logging.DEBUG):
            level, quiet = logging.DEBUG, 0
        else:
            return
        log.log(
            level,
            "batch %d: %d records, %d redelivered, %d accepted, %d duplicates, %d rejected, %d dead letters, "
            "%d matches stored %.1f ms after it was taken (%d in its group, %d records buffered behind it); "
            "offsets %s%s",
            flight.number,
            batch.counts["records"],
            batch.counts["redelivered"],
            batch.counts["accepted"],
            batch.counts["duplicates"],
            sum(rejected_by_code(batch.counts).values()),
            batch.counts["deadletters"],
            batch.counts["states"],
            took * 1000,
            group,
            flight.behind,
            batch.describe_offsets(),
            f" ({quiet} batches since the last line, at DEBUG)" if quiet else "",
        )

    # If a batch fails (say Kafka refuses the results), stop the worker: restarting only the
    # agent would let Faust ack the failed batch and read on past it; a restarted worker
    # resumes from its stored positions instead.
    @app.agent(moves, concurrency=1, name="fold_moves", supervisor_strategy=CrashingSupervisor)
    async def fold_moves(stream):
        queue: asyncio.Queue = asyncio.Queue(DEPTH)
        pending = Pending()
        # The agent's stream stays empty: the consumer hands the move records to `buffered`
        # (faust_fixes 7); the agent keeps the topic subscribed and the worker's lifecycle.
        try:
            async with Committer(lambda: commit_batches(queue, pending)) as committer:
                await fold_batches(queue, pending, committer)
        except Exception as error:
            stop_deadline.arm(STOP_DEADLINE_S, f"a failed batch ({type(error).__name__}: {error})")
            raise

    async def fold_batches(queue: asyncio.Queue, pending: Pending, committer: Committer) -> None:
        number, folded_in = 0, None
        while True:
            records = await buffered.take()
            started = time.perf_counter()
            generation = app.consumer_generation_id
            owned = app.consumer.assignment()
            # Records fetched before a rebalance are refetched from our stored positions.
            incoming = [
                Incoming(m.key, m.value, m.partition, m.offset, m.topic)
                for m in records
                if m.generation_id == generation and m.tp in owned
            ]
            if not incoming:
                continue
            if generation != folded_in:  # after a rebalance, fold on stored states only
                pending.drop()
                folded_in = generation
            number += 1
            batch = core.fold_batch(incoming, pending.load(table.get))
            pending.add(number, batch)
            linger.set(BUSY_LINGER_S if len(incoming) + len(buffered) >= BUSY_RECORDS else 0.0)
            deliveries = await start(send, [out for out in batch.sends if out.kind != "outcomes"])
            for partition, offset in batch.rewind.items():
                buffered.discard(TP(topics.moves, partition))  # beyond the gap: they come again
                await fetch_again(app, TP(topics.moves, partition), offset)
            await put_or_fail(
                queue, InFlight(number, generation, batch, deliveries, started, len(buffered)), committer.task
            )

    return app
