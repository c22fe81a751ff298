"""The consumer group as the pipeline sees it (ports.Group) over Faust's consumer, with workarounds
2 and 5 (the package's docstring): offsets are committed only up to the stored positions, a commit
Kafka refuses is not a crash, and a partition is fetched again by a seek made in the consumer's
thread."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from time import monotonic
from typing import Any

import faust
from aiokafka import TopicPartition
from aiokafka.errors import (
    CommitFailedError,
    GroupAuthorizationFailedError,
    IllegalStateError,
    KafkaError,
    TopicAuthorizationFailedError,
)
from aiokafka.structs import OffsetAndMetadata
from faust.types import TP

from ..pipeline import commit_stored_positions
from ..ports import PositionStore

log = logging.getLogger("plylog.rules")


class FaustGroup:
    """`generation`, `owned()`, `fetch_again()` and `commit()` of the worker's Faust consumer, for
    the partitions of the moves topic."""

    def __init__(self, app: faust.App, moves: str):
        self.app, self.moves = app, moves

    @property
    def generation(self) -> int:
        return int(self.app.consumer_generation_id)

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.app.consumer.assignment() if tp.topic == self.moves}

    async def fetch_again(self, partition: int, offset: int) -> None:
        """Workaround 5: Faust's `Consumer.seek` calls aiokafka's seek from the app's thread while
        the consumer lives in its own; `seek_if_assigned` seeks in the consumer's thread."""
        await self._in_consumer_thread(seek_if_assigned, TP(self.moves, partition), offset)

    async def commit(self, offsets: dict[int, int]) -> bool:
        """Commit `offsets` (partition -> next offset) in the consumer's thread, as Faust's
        driver-level commit does, but with `commit_in_thread`'s answer to a refusal."""
        committed = {TP(self.moves, partition): offset for partition, offset in offsets.items()}
        done = bool(await self._in_consumer_thread(commit_in_thread, committed))
        if done:
            forget_acks_below(self.app.consumer, committed)
        return done

    async def _in_consumer_thread(self, fun: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """`await fun(thread, *args)` in the thread of Faust's consumer (AIOKafkaConsumerThread)."""
        thread = self.app.consumer._thread  # type: ignore[attr-defined]
        return await thread.call_thread(fun, thread, *args)


async def commit_in_thread(thread: Any, offsets: dict[TP, int]) -> bool:
    """Workaround 2, in the consumer's thread: commit the offsets of the partitions still assigned.
    Faust's own driver commit stops the worker on any error but "already rebalanced" (an
    `IllegalStateError` or a broker error around a rebalance, faust-streaming issue #94); here a
    refused commit is a warning and False, since committed offsets are only where a fetch starts
    (the stored positions decide what is answered) and the next commit carries them. A refusal by
    the cluster's ACLs still stops the worker: no later commit would succeed."""
    assigned = thread.assignment()
    wanted = {tp: offset for tp, offset in offsets.items() if tp in assigned}
    if not wanted:
        return False
    commit = {TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(offset, "") for tp, offset in wanted.items()}
    try:
        await thread._ensure_consumer().commit(commit)
    except (GroupAuthorizationFailedError, TopicAuthorizationFailedError):
        raise
    except CommitFailedError:  # the group rebalanced under the commit: it is rejoining
        log.info("offsets not committed: the group rebalanced; the next commit carries them")
        return False
    except KafkaError as error:
        log.warning("offsets not committed (%s: %s); the next commit carries them", type(error).__name__, error)
        return False
    now = monotonic()  # what Faust's commit records, for its "has not committed" warnings
    thread.tp_last_committed_at.update({tp: now for tp in wanted})
    return True


async def seek_if_assigned(thread: Any, tp: TP, offset: int) -> bool:
    """Seek `tp` to `offset` and wait for its position, as Faust's `seek_wait` does, if the
    partition is still assigned. A rebalance can revoke it while the fold awaits the producer, and
    aiokafka refuses to seek (or position) a partition it no longer has (`IllegalStateError`),
    which stopped the worker; its next owner reads it from the stored position anyway."""
    if tp in thread.assignment():
        try:
            await thread._seek_wait(thread._ensure_consumer(), {tp: offset})
            return True
        except IllegalStateError:  # revoked while the seek waited for the position
            pass
    log.info("%s[%d]: not fetched again from %d: the partition was revoked", tp.topic, tp.partition, offset)
    return False


def commit_only_stored_positions(app: faust.App, positions: PositionStore, group: FaustGroup) -> None:
    """Workaround 2: every offset commit (periodic, on rebalance, on stop) commits just after the
    stored positions, once Kafka has them (pipeline.commit_stored_positions).

    Faust would commit what it acked, which around a rebalance includes records it skipped, so
    its committed offsets could run ahead of what was answered; and moving the position back
    later does not work, because Faust drops re-fetched records below what it has already
    drained. With this, a (re)assigned partition is fetched from at most one commit interval
    before the last stored position; the records up to the position are skipped as answered."""

    async def force_commit(topics: Any = None, start_new_transaction: bool = True) -> bool:
        return await commit_stored_positions(positions, group)

    consumer: Any = app.consumer
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
