"""Garbage collection for long-running services: a full collection pauses the process.

CPython's cyclic collector walks every tracked object of the generation it collects; in the rules
worker a full (oldest-generation) collection walked the modules, Faust's and aiokafka's objects
and the match states: pauses long enough to show in the p99 produce → result. Most of what
exists when a service is ready lives as long as it does, so it is collected once and frozen
(gc.freeze: the permanent generation, never walked again; reference counting still frees what is
dropped later, only cycles among it would stay). Later full collections walk only newer objects.
The gateway settles once it is ready; the rules worker each time a rebalance completes (its table
recovered); the projector each time it is assigned partitions.

The gateway also collects its youngest generation less often (`young_threshold`). What it makes
after start-up lives long too: each seat socket holds tasks, coroutines and buffers (~110,000
tracked objects with 400 sockets), and they were walked again and again on their way to the
oldest generation. Collecting it every 50,000 allocations instead of CPython's 700 cut the
gateway's CPU per socket move; in the rules worker it changed nothing (its heap is small since
Faust's polls are capped, services/rules/app.py), so it is the gateway's only. The figures:
docs/decisions/garbage-collection.md.
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger("plylog.heap")


#: Allocations between collections of the youngest generation in the gateway (CPython's default: 700).
GATEWAY_YOUNG_THRESHOLD = 50_000


def settle(young_threshold: int | None = None) -> None:
    """Collect what start-up left behind, then freeze the survivors; with `young_threshold`, collect
    the youngest generation after that many allocations (the older ones keep their ratios)."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    if young_threshold is not None:
        gc.set_threshold(young_threshold, *gc.get_threshold()[1:])
    log.info(
        "heap: %d objects frozen now that the service is ready (%.0f ms); later collections skip them; "
        "collection thresholds %s",
        gc.get_freeze_count(),
        (time.perf_counter() - started) * 1000,
        gc.get_threshold(),
    )
