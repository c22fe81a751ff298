"""Workarounds 3 and 6 (the package's docstring): the match table, whose writes name their changelog
partition and are awaited, and whose recovery keeps the value written for the highest moves offset;
its changelog topic, made before the worker joins its group. `TablePositions` is the pipeline's
position store (ports.PositionStore) over the same table: positions and states share one changelog
(docs/decisions/positions-in-table.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import faust

from ..core import position_key, read_position, stored_offset


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
        """Wait until Kafka has every changelog write made so far; raise the first refusal. Callers
        may wait at once (the committer, an offset commit): each waits for all it saw."""
        if self._sending is not None:
            await asyncio.shield(self._sending)  # a worker stopping must not cut the sender short
        pending = list(self._unacknowledged or ())
        outcomes = await asyncio.shield(asyncio.gather(*pending, return_exceptions=True))
        if self._unacknowledged:
            self._unacknowledged = [sent for sent in self._unacknowledged if not sent.done()]
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def entries(self) -> Iterable[tuple[bytes, bytes]]:
        """Every (key, value) in memory now (the sweep's scan: read through before any change)."""
        return self.data.items()

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


class TablePositions:
    """The position store (ports.PositionStore) over the match table: a moves partition's position
    is the table entry `core.position_key(partition)`, written to that partition's changelog."""

    def __init__(self, table: MatchTable):
        self.table = table

    def position(self, partition: int) -> int:
        return read_position(self.table.get(position_key(partition)))

    def store(self, partition: int, offset: int) -> None:
        self.table.store(position_key(partition), b"%d" % offset, partition)

    async def acknowledged(self) -> None:
        await self.table.acknowledged()


def create_changelog_before_joining(settings: Any, partitions: int) -> str:
    """Make the rules changelog topic (compacted, the moves' partition count, the installation's
    replication) if it is missing, and wait until every partition has a leader (see 6 above)."""
    from services.common import kafka_admin  # its Kafka client is imported only when the topic is made

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
