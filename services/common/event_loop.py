"""Which asyncio event loop the gateway and the rules worker run on.

uvloop (libuv, in C) by default: the same asyncio API with cheaper sockets, timers and callbacks,
the bulk of what both processes do besides the fold. PLYLOG_EVENT_LOOP=asyncio keeps the standard
loop (to rule uvloop out when chasing a problem); without uvloop installed, asyncio with a note.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping

from .settings import SettingsError

log = logging.getLogger("plylog.event_loop")
CHOICES = ("uvloop", "asyncio")


def chosen_loop(env: Mapping[str, str]) -> str:
    """ "uvloop" or "asyncio", from PLYLOG_EVENT_LOOP (default uvloop, when it is installed)."""
    wanted = env.get("PLYLOG_EVENT_LOOP", "").strip().lower() or "uvloop"
    if wanted not in CHOICES:
        raise SettingsError(f"PLYLOG_EVENT_LOOP={wanted!r}: choose one of {', '.join(CHOICES)}")
    if wanted == "uvloop" and importlib.util.find_spec("uvloop") is None:
        log.warning("uvloop is not installed; running on the standard asyncio loop (pip install uvloop)")
        return "asyncio"
    return wanted
