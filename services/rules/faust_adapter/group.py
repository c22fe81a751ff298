"""The consumer group as the pipeline sees it (ports.Group) over Faust's consumer, with workarounds
2 and 5 (the package's docstring): offsets are committed only up to the stored positions, and a
partition is fetched again by a seek made in the consumer's thread."""

from __future__ import annotations

from typing import Any

import faust
from faust.types import TP

from ..pipeline import commit_stored_positions
from ..ports import PositionStore


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
        the consumer lives in its own; `seek_wait` seeks in the consumer's thread."""
        await self.app.consumer.seek_wait({TP(self.moves, partition): offset})

    async def commit(self, offsets: dict[int, int]) -> bool:
        """Commit `offsets` (partition -> next offset) through Faust's driver-level commit."""
        consumer: Any = self.app.consumer
        committed = {TP(self.moves, partition): offset for partition, offset in offsets.items()}
        done = bool(await consumer._commit(committed))
        if done:
            forget_acks_below(consumer, committed)
        return done


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
