"""Every place the rules worker works around faust-streaming 0.15.3, each with its reason. Each has
a test that fails when Faust's behaviour changes (so a fix in Faust is noticed and the workaround
removed): in tests/unit/test_faust_fixes.py, and for the fetch path (items 1, 5, 7 and 9, which
live in faust_fetch.py) in tests/unit/test_faust_fetch.py and test_rules_batching.py; item 10
lives in produce.py, with its tests in tests/unit/test_rules_produce.py.

1. `bound_fetch_long_poll`: Faust hard-codes aiokafka's fetch long-poll at 1.5 s.
2. `commit_only_stored_positions`: Faust commits what it acked, which can run ahead of what was
   answered around a rebalance; and the acks below each commit are forgotten as Faust's commit
   would (else they are kept forever).
3. `MatchTable`: a batch mixes partitions, so Faust's "current event" cannot name a write's
   changelog partition; recovery is last-write-wins, so a worker that was paused past its
   session (GC, SIGSTOP, a VM pause) and wrote older states after the new owner's would roll the
   match back at the next recovery: here the state with the highest moves offset wins; and Faust
   only logs a changelog write Kafka did not take (`_on_published error`), so a state could be
   lost while a later position is stored: here the worker awaits its writes (`acknowledged`).
   Its writes go to the producer directly, in order, not through Faust's one-record-per-turn
   `send_soon` buffer, which held the pipeline up.
4. `TableManager` / `Recovery`: when the assignment changes while a recovery runs (a worker
   joins), Faust seeks standby partitions whose start offset it never built (None) and aiokafka
   raises `ValueError: Offset must be a positive integer`, which stops the worker. And Faust ends
   a recovery pass when the next rebalance's assignment arrives, not when its revocation does, so
   a pass ran on through the next join and resumed its old partitions once the new assignment
   was in place; a partition taken over then had a record of the old assignment counted as read,
   and the new pass skipped the records before it (states rolled back; here a pass ends at the
   revocation, and a partition taken over is read from where its start was built, with a
   warning if anything else was counted). "Taken over" is measured against the last recovery
   that completed, not the last pass: a pass cut short had made a partition active unread. The
   changelog queue is cleared right after the seek (resuming the flow would clear it a moment
   later, but Faust's reader could count a record of before the seek in between). Faust signals
   `on_rebalance_complete` even for a pass the next rebalance overtook: `Recovery.superseded`
   tells the handlers that mark the worker ready.
5. `fetch_again`: Faust's `Consumer.seek` calls aiokafka's seek from the app's thread while the
   consumer lives in its own thread (AIOKafkaConsumerThread); under load that raced the fetcher
   (`KeyError` in aiokafka's `fetched_records`, the Fetcher crashed). `seek_wait` runs the seek
   in the consumer's thread.
6. `create_changelog_before_joining`: Faust creates the table's changelog topic while the worker
   starts, but the group's first assignment is computed from metadata that may not show it yet
   (a cluster propagates new topics more slowly than one broker); the assignor then leaves the
   changelog out ("Ignoring missing topic"), and until the metadata is refreshed (minutes) a
   worker taking partitions over recovers nothing: it answered moves of existing matches with
   unknown_match (seen on a cluster, scaling 1 -> 3 workers). The worker makes the topic,
   and waits for its leaders, before Faust starts.
7. `deliver_in_batches`: Faust hands the agent one event at a time, at a high CPU cost per event
   before the agent sees it: its drain
   loop races every message against a flow suspension with `mode`'s `wait_first` (four tasks and
   an `asyncio.wait` per message), then the conductor, a channel queue and the stream iterator
   each take a turn. The worker's drain hands the move records of each fetch to the fold loop's
   buffer as one list, with Faust's rules kept (flow control, generation, read offsets: records
   below the read offset are dropped as Faust drops them); every other record (changelog, standby)
   still goes to Faust's own callback, one after the other, with one race against a flow
   suspension per fetch instead of one per record.
8. `Linger`: Faust gives aiokafka one linger for the producer's life (`producer_linger`); the
   worker sets it per batch: none for a few moves (a client waits for its answer), a little
   while many come together, so that a batch's results and the states and positions of the
   batches before it share produce requests.
9. `count_seeks`: aiokafka forgets what it fetched of a partition when the partition is seeked,
   but records already on their way from the consumer's thread to Faust's are not recalled: a
   recovery that seeked a changelog partition back to its start could count such a record (of a
   later offset) as read and skip every record before it. The drain drops a changelog record
   whose partition was seeked after it was fetched.
10. `faust_send` (produce.py): Faust's `Producer.send` raises its own `ProducerSendError`
   from any error aiokafka raises before sending, so a record over the producer's request size
   (a dead letter keeping a huge key) looked like Kafka failing: the worker stopped, and its
   restart met the same record again. The record's own refusal is raised as itself, so the
   record is replaced like one the broker refused.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

import faust
from faust.tables.recovery import RebalanceAgain
from faust.tables.recovery import Recovery as FaustRecovery
from faust.types import TP

from .core import position_key, read_position, stored_offset

log = logging.getLogger("plylog.rules")


# --- 2. offset commits -----------------------------------------------------------------------------
def commit_only_stored_positions(app: faust.App, table: MatchTable, moves: str) -> None:
    """Every offset commit (periodic, on rebalance, on stop) commits just after our stored
    positions, once the producer has flushed them (and the states) to the changelog.

    Faust would commit what it acked, which around a rebalance includes records it skipped, so
    its committed offsets could run ahead of what was answered; and moving the position back
    later does not work, because Faust drops re-fetched records below what it has already
    drained. With this, a (re)assigned partition is fetched from at most one second before the
    last stored position; the records up to the position are skipped as answered."""
    consumer = app.consumer

    async def force_commit(topics: Any = None, start_new_transaction: bool = True) -> bool:
        await app.producer.flush()  # the positions below are in the changelog before Kafka hears of them
        offsets = {
            tp: read_position(table.get(position_key(tp.partition))) + 1
            for tp in consumer.assignment()
            if tp.topic == moves
        }
        offsets = {tp: offset for tp, offset in offsets.items() if offset > 0}
        committed = bool(offsets) and await consumer._commit(offsets)  # Faust's driver-level commit
        if committed:
            forget_acks_below(consumer, offsets)
        return committed

    consumer.force_commit = force_commit


def forget_acks_below(consumer: Any, offsets: dict[TP, int]) -> None:
    """What Faust's own commit does to its bookkeeping, which the commit above bypasses: Faust
    records every acked offset (`Consumer.ack`) until a commit passes it, so without this the
    worker kept two entries per record it ever read (a list and a set per partition)."""
    for tp, offset in offsets.items():
        consumer._committed_offset[tp] = offset  # Faust records no ack below it from now on
        acked = consumer._acked.get(tp)
        if acked:
            acked[:] = [number for number in acked if number >= offset]
            consumer._acked_index[tp] = set(acked)
        gaps = consumer._gap.get(tp)  # an IntervalTree of offsets Faust saw skipped
        if gaps:
            gaps.remove_envelop(0, offset)


# --- 3. the table ----------------------------------------------------------------------------------
class MatchTable(faust.Table):
    """Match states and partition positions keyed by bytes (see services/rules/core.py).

    Its changelog records go to the producer in the order they are written, all of those waiting
    at once, instead of through Faust's `send_soon` buffer, which hands the producer one record
    per turn of the event loop: a group's states then waited longer for their acknowledgement,
    and batches behind them for a place in the pipeline (the measurement:
    docs/decisions/faust-table-writes.md). Nothing Faust's path adds is used here: the memory store
    keeps no persisted offsets, the table has no expiry or windows, the worker uses no
    transactions."""

    _unacknowledged: list | None = None
    _unsent: list | None = None
    _sending: asyncio.Task | None = None

    def store(self, key: bytes, value: bytes, partition: int) -> None:
        """Write `value`; its changelog record goes to `partition` (the partition of the move that
        produced it, the one this table partition is recovered for)."""
        self.data[key] = value
        self._log(key, value, partition)

    def forget(self, key: bytes, partition: int) -> None:
        """Delete `key` (a tombstone on the changelog `partition`, which compaction then removes)."""
        if key in self.data:
            del self.data[key]
        self._log(key, None, partition)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise RuntimeError("MatchTable is written only through store(key, value, partition)")

    def __delitem__(self, key: Any) -> None:
        raise RuntimeError("MatchTable is deleted from only through forget(key, partition)")

    def _log(self, key: bytes, value: bytes | None, partition: int) -> None:
        if self._unsent is None:
            self._unsent = []
        self._unsent.append((key, value, partition))
        if self._sending is None or self._sending.done():
            self._sending = asyncio.ensure_future(self._send_unsent())

    async def _send_unsent(self) -> None:
        """One sender, so the records reach the producer in the order they were written."""
        producer, topic = self.app.producer, self.changelog_topic.get_topic_name()
        while self._unsent:
            writes, self._unsent = self._unsent, []
            for key, value, partition in writes:
                try:
                    sent = await producer.send(topic, key, value, partition, None, None)
                except Exception as error:  # noqa: BLE001 - refused before Kafka saw it: acknowledged() raises it
                    sent = asyncio.get_running_loop().create_future()
                    sent.set_exception(error)
                if self._unacknowledged is None:
                    self._unacknowledged = []
                self._unacknowledged.append(sent)

    _applied: dict | None = None

    def _count_applied(self, message: Any) -> None:
        if self._applied is None:
            self._applied = {}
        seen = self._applied.setdefault(message.partition, [0, message.offset, message.offset])
        seen[0] += 1
        seen[1], seen[2] = min(seen[1], message.offset), max(seen[2], message.offset)

    def applied_since(self) -> dict[int, tuple[int, int, int]]:
        """Changelog records read per partition (recovery and standby) since the last call:
        partition -> (records, lowest offset, highest offset), for the log a recovery ends with."""
        applied, self._applied = self._applied or {}, {}
        return {partition: tuple(seen) for partition, seen in sorted(applied.items())}

    async def acknowledged(self) -> None:
        """Wait until Kafka has every changelog write made so far; raise the first refusal."""
        if self._sending is not None:
            await asyncio.shield(self._sending)  # a worker stopping must not cut the sender short
        pending, self._unacknowledged = self._unacknowledged or [], []
        outcomes = await asyncio.shield(asyncio.gather(*pending, return_exceptions=True))
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def apply_changelog_batch(self, batch: Iterable[Any]) -> None:
        """Recovery and standbys: of the values of a key, the one written for the highest moves
        offset wins, whatever the order they were written in. A late write of a paused worker (an
        older state, a position further back) is harmless. Deletions always apply."""
        winners: dict[Any, Any] = {}
        for event in batch:
            self._count_applied(event.message)
            key, value = event.key, event.message.value
            current = winners[key].message.value if key in winners else self.data.get(key)
            if value is None or current is None or stored_offset(value) >= stored_offset(current):
                winners[key] = event
        super().apply_changelog_batch(winners.values())


# --- 4. recovery ---------------------------------------------------------------------------------
class Recovery(FaustRecovery):
    """Faust's recovery with two fixes (item 4 above) and a guard for the partitions it takes over."""

    _rebalance: int | None = None  # app.rebalancing_count when this recovery's rebalance assigned
    _taken_over: frozenset = frozenset()  # changelog partitions active now and not recovered here
    _recovered: frozenset = frozenset()  # active since a recovery completed, through every rebalance
    _reading_from: dict | None = None

    async def on_rebalance(self, assigned: set, revoked: set, newly_assigned: set, generation_id: int = 0) -> None:
        await super().on_rebalance(assigned, revoked, newly_assigned, generation_id)
        if generation_id == self.app.consumer_generation_id:  # else Faust ignored it as stale too
            self._rebalance = self.app.rebalancing_count
            # Against the last *completed* recovery, not the last pass: a pass cut short by the
            # next rebalance made a partition active without reading it (seen in the cluster
            # scaling test: generation 3 cut short, generation 4 then counted the partition as
            # kept and read it on from a record of another assignment).
            self._taken_over = frozenset(self.active_tps - self._recovered)
            self._recovered = self._recovered & frozenset(self.active_tps)

    async def on_recovery_completed(self, generation_id: int = 0) -> None:
        if generation_id == self.app.consumer_generation_id:
            self._recovered = frozenset(self.active_tps)
        await super().on_recovery_completed(generation_id)

    def _rebalancing_again(self) -> bool:
        return self._rebalance is not None and self.app.rebalancing_count != self._rebalance

    def superseded(self) -> bool:
        """Whether the next rebalance has begun since this recovery's assignment. Faust sends
        `on_rebalance_complete` before it checks that (Recovery.on_recovery_completed and
        _resume_streams), so a pass cut short still signals it: a handler that marks the worker
        ready asks this first (else /readyz said ready while the next recovery ran)."""
        return self._rebalancing_again() or self._generation_id != self.app.consumer_generation_id

    async def _wait(self, coro: Any, timeout: Any = None) -> None:
        """Every step of a recovery pass goes through here. Faust ends a pass when the next
        rebalance's assignment arrives, but not when its revocation does: a pass that ran on
        during the next join resumed the partitions of its (old) assignment once the new one was
        in place, and records fetched from there were counted as read by the new pass, which
        then skipped the records before them (their states would be rolled back)."""
        if self._rebalancing_again():
            if asyncio.iscoroutine(coro):
                coro.close()
            self._end_pass()
        await super()._wait(coro, timeout=timeout)
        if self._rebalancing_again():
            self._end_pass()

    def _end_pass(self) -> None:
        log.info(
            "recovery: the next rebalance has begun; this pass ends here and the next one starts "
            "when the new assignment arrives"
        )
        raise RebalanceAgain()

    async def _build_offsets(self, consumer: Any, tps: set[TP], destination: Any, title: str) -> None:
        if title == "active":
            self._forget_leaked(destination, "before reading started")
        await super()._build_offsets(consumer, tps, destination, title)
        if title == "active":
            self._reading_from = {tp: destination[tp] for tp in self._taken_over if tp in destination}

    async def _seek_offsets(self, consumer: Any, tps: set[TP], offsets: Any, title: str) -> None:
        """A partition with no start offset is read from the beginning (Faust's -1), which is always
        correct; the rebalance that changed the assignment starts a new recovery anyway."""
        if title == "active":
            self._forget_leaked(offsets, "while reading started", self._reading_from or {})
        for tp in tps:
            if offsets.get(tp) is None:
                offsets[tp] = -1
        await super()._seek_offsets(consumer, tps, offsets, title)
        if title == "active":
            # While the seek waited for the consumer's thread, Faust's changelog reader went on
            # with records queued before it; what is still queued is cleared now, as resuming the
            # flow would do next (clear_on_resume), before the reader can count one of them.
            self.tables.changelog_queue.clear()
            self._forget_leaked(offsets, "while the seek was made", self._reading_from or {})

    def _forget_leaked(self, offsets: Any, when: str, expected: dict | None = None) -> None:
        """A partition this worker takes over is read from where the build put it (the beginning:
        what is in memory of it may be partial); a record counted as read before that came from
        an earlier assignment or a pass that did not finish, and counting it would skip what
        comes before it."""
        for tp in self._taken_over:
            start = (expected or {}).get(tp)
            if offsets.get(tp) not in (None, -1, start):
                log.warning(
                    "recovery of %s[%d]: a record at offset %s of an earlier assignment (or an "
                    "unfinished pass) was counted as read %s; reading it from %s instead",
                    tp.topic,
                    tp.partition,
                    offsets[tp],
                    when,
                    "the beginning" if start in (None, -1) else start,
                )
                offsets[tp] = start


class TableManager(faust.tables.TableManager):
    """Faust's table manager with the recovery above (app setting `TableManager`)."""

    @property
    def recovery(self) -> Recovery:
        if self._recovery is None:
            self._recovery = Recovery(self.app, self, beacon=self.beacon, loop=self.loop)
        return self._recovery


def create_changelog_before_joining(settings: Any, partitions: int) -> str:
    """Make the rules changelog topic (compacted, the moves' partition count, the installation's
    replication) if it is missing, and wait until every partition has a leader (see 6 above)."""
    from services.common import kafka_admin

    name = settings.topics.rules_changelog
    configs = changelog_configs(settings)
    status = kafka_admin.create_topics(
        settings.kafka_bootstrap,
        [kafka_admin.TopicSpec(name, partitions, configs, settings.replication_factor)],
        timeout=60,
    )
    if status[name] != "created":
        kafka_admin.ensure_topic_configs(settings.kafka_bootstrap, name, configs)
    return status[name]


#: The changelog is compacted soon after it is written, so a recovery reads about one record per
#: match in the table (active ones and those finished less than games.fold.FORGET_FINISHED_AFTER
#: records ago), not every state ever stored: a segment is closed by the first write after a
#: minute (Kafka compacts only closed ones), compacted when a tenth of it is superseded, and the
#: tombstones of forgotten matches are dropped a minute after compaction. They are the only
#: deletions, so a standby or a recovery that misses one keeps a forgotten match's entry, which
#: changes no answer (the fold forgets it by its offsets) and the next sweep deletes it again.
CHANGELOG_COMPACTION = {
    "cleanup.policy": "compact",
    "segment.ms": "60000",
    "min.cleanable.dirty.ratio": "0.1",
    "delete.retention.ms": "60000",
}


def changelog_configs(settings: Any) -> dict[str, str]:
    configs = dict(CHANGELOG_COMPACTION)
    if settings.replication_factor > 1:
        configs["min.insync.replicas"] = str(settings.min_insync_replicas)
    return configs


# --- 8. the producer's linger, per batch -----------------------------------------------------------
class Linger:
    """`set(seconds)`: the linger of the producer batches aiokafka opens from then on (its
    MessageAccumulator reads `_linger_time` when it opens a batch for a partition). Many moves
    together share produce requests with a little linger; a lone move waits for none, so the
    worker lingers only for 32 records or more (docs/decisions/faust-linger.md)."""

    def __init__(self, app: faust.App):
        self._app = app
        self.seconds: float | None = None

    def set(self, seconds: float) -> None:
        if seconds == self.seconds:
            return
        producer = self._app.producer._producer  # aiokafka's, None until Faust's producer started
        if producer is not None:
            producer._message_accumulator._linger_time = seconds
            self.seconds = seconds
