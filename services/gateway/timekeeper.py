"""The timekeeper: claims `claim_timeout` (as player `plylog-timekeeper`) for every match in
`{p}deadlines` whose seat to move has run out of time, so timed matches end by themselves.

The claim's event id is derived from the deadline, so several gateways claiming the same
timeout produce one accepted record and duplicates. A player cannot use that id up: the rules
remember an id per player, so a move a player sent with it leaves the timekeeper's claim a claim.
The rules decide (`not_timed_out` if the clock has not run out as of the claim's `at`). A claim
still listed later is sent again, after RECLAIM_S, then twice as long each time up to
RECLAIM_MAX_S; the queue is read past the entries waiting for that, so no match, nor any number
of them, holds up the others' timeouts.
"""

from __future__ import annotations

import asyncio
import logging
import time

from games.match import TIMEKEEPER
from services.common.projection import Projection

from .metrics import Metrics
from .submit import Submitter, move_record

log = logging.getLogger("plylog.gateway.timekeeper")
RECLAIM_S = 5.0
RECLAIM_MAX_S = 300.0
PAGE = 100
MAX_CLAIMS_PER_TICK = 500


class Timekeeper:
    def __init__(self, projection: Projection, submitter: Submitter, interval_s: float, metrics: Metrics):
        self._projection = projection
        self._submitter = submitter
        self._interval_s = interval_s
        self._metrics = metrics
        self._claimed: dict[tuple[str, int], tuple[float, float]] = {}  # -> (when, wait before the next)

    async def run(self) -> None:
        log.info("timekeeper: checking clocks every %.2fs", self._interval_s)
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - Redis or Kafka away for a moment: try again
                log.warning("timekeeper: %s: %s", type(error).__name__, error)
            await asyncio.sleep(self._interval_s)

    async def tick(self) -> int:
        """Claim every run-out clock not claimed lately; returns how many claims were produced."""
        now = time.time()
        claims, offset, claimed = 0, 0, []
        while claims < MAX_CLAIMS_PER_TICK:
            due = await self._projection.due_deadlines(int(now * 1000), PAGE, offset)
            offset += len(due)
            for match_id, deadline in due:
                if not self._due_again((match_id, deadline), now) or claims >= MAX_CLAIMS_PER_TICK:
                    continue
                record = move_record(match_id, TIMEKEEPER, {"type": "claim_timeout"}, event_id=f"timeout-{deadline}")
                await self._submitter.submit(record)
                self._metrics.timeout_claims.inc()
                claims += 1
                claimed.append(match_id)
            if len(due) < PAGE:
                break
        if claims:
            log.info("timekeeper: claimed %d timeout(s): %s", claims, ", ".join(claimed[:10]))
        if len(self._claimed) > 10_000:
            self._claimed = {k: v for k, v in self._claimed.items() if now - v[0] < v[1]}
        return claims

    def _due_again(self, claim: tuple[str, int], now: float) -> bool:
        """Whether to send this claim now; if so, notes it and doubles the wait before the next."""
        when, wait = self._claimed.get(claim, (0.0, RECLAIM_S / 2))
        if now - when < wait:
            return False
        self._claimed[claim] = (now, min(RECLAIM_MAX_S, wait * 2))
        return True
