"""Once a batch has failed, the worker exits within a deadline, whatever Faust's stop waits for.

A failed batch stops the worker (app.py, fold_moves) and a restart answers the batch again from
the stored positions. Faust's stop after such a failure was seen to wait for minutes ("Wait for
streams...": its wait for the stream's messages commits offsets, and our commit flushes the
producer first; docs/decisions/stop-deadline.md).
Nothing the stop could still write is needed: positions are stored only after the states they
cover, and offsets are committed only up to stored positions. So a timer exits the process.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger("plylog.rules")
EXIT_CODE = 70  # EX_SOFTWARE: stopped after an error, not by request


def arm(seconds: float, why: str, exit: Callable[[int], None] = os._exit) -> threading.Timer:
    """Exit with EXIT_CODE in `seconds` unless the process has ended (or the timer is cancelled)."""

    def expire() -> None:
        log.error(
            "still stopping %.0f s after %s; exiting now (a restart answers it again from the stored positions)",
            seconds,
            why,
        )
        for handler in logging.getLogger().handlers + log.handlers:
            handler.flush()
        exit(EXIT_CODE)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True  # never what keeps a stopped worker alive
    timer.start()
    return timer
