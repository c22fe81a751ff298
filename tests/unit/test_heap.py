"""services/common/heap.py: what exists when a service is ready is frozen out of later collections."""

from __future__ import annotations

import gc
import weakref

from services.common import heap


def test_settle_collects_start_up_garbage_then_freezes_the_survivors():
    class Node:
        pass

    kept, cycle = Node(), Node()
    cycle.self = cycle  # start-up garbage only the cyclic collector frees
    gone = weakref.ref(cycle)
    del cycle
    try:
        heap.settle()
        assert gone() is None  # collected before the freeze, not frozen for good
        assert not any(o is kept for o in gc.get_objects())  # frozen: no later collection walks it
    finally:
        gc.unfreeze()
    assert any(o is kept for o in gc.get_objects())


def test_a_young_threshold_spaces_the_youngest_collections_and_keeps_the_older_ratios():
    before = gc.get_threshold()
    try:
        heap.settle(young_threshold=heap.GATEWAY_YOUNG_THRESHOLD)
        assert gc.get_threshold() == (heap.GATEWAY_YOUNG_THRESHOLD, *before[1:])
        heap.settle()
        assert gc.get_threshold()[0] == heap.GATEWAY_YOUNG_THRESHOLD  # left as the service set it
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
