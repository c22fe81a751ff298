"""The sweep: the worker deletes the states of finished matches the fold has forgotten.

A finished match is forgotten once its partition holds games.fold.FORGET_FINISHED_AFTER records
after the one that ended it (core.forgettable, by the stored positions of the partitions owned).
Any owner may delete such an entry at any time: it changes no answer. There is no await between
the scan and the deletes, so no newer state of a key (a match created again under a forgotten id)
can be stored in between and deleted; a failed delete only leaves an entry the fold forgets anyway
(the tombstones are awaited with the next stored states).
"""

from __future__ import annotations

import logging

from games.fold import FORGET_FINISHED_AFTER

from .core import Counters, forgettable
from .ports import PositionStore, Table

log = logging.getLogger("plylog.rules")


def forget_finished(table: Table, positions: PositionStore, owned: set[int], counters: Counters) -> int:
    """Delete the forgotten finished matches of the partitions `owned`; how many."""
    gone = forgettable(table.entries(), {partition: positions.position(partition) for partition in owned})
    for key, partition in gone:
        table.forget(key, partition)
    if gone:
        counters.totals["forgotten"] += len(gone)
        log.info(
            "forgot %d finished matches (ended over %d records before their partition's position)",
            len(gone),
            FORGET_FINISHED_AFTER,
        )
    return len(gone)
