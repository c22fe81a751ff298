"""Workaround 4 (the package's docstring): Faust's recovery, fixed for rebalances that overlap it.

A worker joining while another recovers no longer stops it (Faust seeked standby partitions whose
start it never built); a recovery pass ends at the next rebalance's revocation, and a partition
taken over is read from where its start was built (docs/decisions/faust-recovery.md)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import faust
from faust.tables.recovery import RebalanceAgain
from faust.tables.recovery import Recovery as FaustRecovery
from faust.types import TP

log = logging.getLogger("plylog.rules")


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


def superseded(app: faust.App) -> bool:
    """Whether the app's last recovery pass was overtaken by the next rebalance (Recovery.superseded):
    the handlers of `on_rebalance_complete` that mark the worker ready ask this first."""
    manager: Any = app.tables
    return bool(manager.recovery.superseded())


class TableManager(faust.tables.TableManager):
    """Faust's table manager with the recovery above (app setting `TableManager`)."""

    @property
    def recovery(self) -> Recovery:
        if self._recovery is None:
            self._recovery = Recovery(self.app, self, beacon=self.beacon, loop=self.loop)
        return cast(Recovery, self._recovery)
