"""What a stored batch leaves: its counts in the counters (metrics.json, Prometheus) and, for the
notable ones (core.BatchLines: the first few, any with redeliveries or dead letters, one every few
seconds), a log line; the others at DEBUG."""

from __future__ import annotations

import logging
import time

from .core import BatchLines, Counters, rejected_by_code
from .pipeline import InFlight

log = logging.getLogger("plylog.rules")


class BatchReport:
    def __init__(self, counters: Counters, lines: BatchLines | None = None):
        self.counters, self.lines = counters, lines or BatchLines()

    def stored(self, flight: InFlight, group: int) -> None:
        """Batch `flight` is stored, in a group of `group` batches."""
        now = time.perf_counter()
        batch, took = flight.batch, now - flight.started
        self.counters.add(batch, took)
        if self.lines.notable(flight.number, batch.counts, now):
            level, quiet = logging.INFO, self.lines.since_last()
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
