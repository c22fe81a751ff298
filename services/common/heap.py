"""Garbage collection for long-running services: a full collection pauses the process.

CPython's cyclic collector walks every tracked object of the generation it collects; in the rules
worker a full (oldest-generation) collection walked the modules, Faust's and aiokafka's objects
and the match states: 60-120 ms pauses a few times a minute at 1,000 moves/s, part of the p99
produce → result. Most of what exists when a service is ready lives as long as it does, so it is
collected once and frozen (gc.freeze: the permanent generation, never walked again; reference
counting still frees what is dropped later, only cycles among it would stay). Later full
collections walk only newer objects. The gateway settles once it is ready; the rules worker
each time a rebalance completes (its table recovered); the projector each time it is assigned
partitions (its full collections paused it ~22 ms at 1,000 moves/s).
"""
from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger("plylog.heap")


def settle() -> None:
    """Collect what start-up left behind, then freeze the survivors."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    log.info("heap: %d objects frozen now that the service is ready (%.0f ms); later collections skip them",
             gc.get_freeze_count(), (time.perf_counter() - started) * 1000)
