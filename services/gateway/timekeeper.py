"""The timekeeper: claims `claim_timeout` (as player `plylog-timekeeper`) for every match in
`{p}deadlines` whose seat to move has run out of time, so timed matches end by themselves.

The claim's event id is derived from the deadline, so several gateways claiming the same
timeout produce one accepted record and duplicates. The rules decide (`not_timed_out` if the
clock has not run out as of the claim's `at`); a claim still listed after RECLAIM_S is sent again.
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


class Timekeeper:
    def __init__(self, projection: Projection, submitter: Submitter, interval_s: float, metrics: Metrics):
        self._projection = projection
        self._submitter = submitter
        self._interval_s = interval_s
        self._metrics = metrics
        self._claimed: dict[tuple[str, int], float] = {}

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
        """Claim every run-out clock once; returns how many claims were produced."""
        now = time.time()
        due = await self._projection.due_deadlines(int(now * 1000))
        claims = 0
        for match_id, deadline in due:
            if now - self._claimed.get((match_id, deadline), 0.0) < RECLAIM_S:
                continue
            record = move_record(match_id, TIMEKEEPER, {"type": "claim_timeout"}, event_id=f"timeout-{deadline}")
            await self._submitter.submit(record)
            self._claimed[(match_id, deadline)] = now
            self._metrics.timeout_claims.inc()
            claims += 1
        if claims:
            log.info("timekeeper: claimed %d timeout(s): %s", claims, ", ".join(m for m, _ in due[:10]))
        if len(self._claimed) > 10_000:
            self._claimed = {k: t for k, t in self._claimed.items() if now - t < RECLAIM_S}
        return claims
