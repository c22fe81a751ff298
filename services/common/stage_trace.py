"""Where a record's time goes: the stages it passes in a service, as JSON lines, for `bench.trace`.

Off unless PLYLOG_TRACE_DIR is set (Settings.trace_dir): then each service appends
`<dir>/<service>-<pid>.jsonl`, one line per stage a group of records passed at once:
`{"stage": "...", "t": <seconds>, "ids": [event ids]}`. The clock is `time.perf_counter()`,
CLOCK_MONOTONIC on Linux: the same clock in every process of the machine, so the bench's send time
and each service's stages line up. The event id names a record in every service it passes (a move
and its result carry the same one). Off, a trace costs one `if` per batch.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

import orjson

_EVENT_ID = re.compile(rb'"event_id":"([^"]{1,200})"')


def event_id(raw: bytes | None) -> str | None:
    """The event id a move or result record carries (the first one in its bytes), or None."""
    found = _EVENT_ID.search(raw) if raw else None
    return found.group(1).decode(errors="replace") if found else None


class StageTrace:
    """`mark(stage, ids)`: the records `ids` passed `stage` now."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "ab", buffering=1 << 16)  # noqa: SIM115 - open for the process's life

    def mark(self, stage: str, ids: Iterable[str | None], at: float | None = None) -> None:
        wanted = [i for i in ids if i is not None]
        if wanted:
            line = {"stage": stage, "t": time.perf_counter() if at is None else at, "ids": wanted}
            self._file.write(orjson.dumps(line) + b"\n")

    def flush(self) -> None:
        self._file.flush()


def open_trace(directory: Path | None, service: str) -> StageTrace | None:
    """The trace of this process in `directory`, or None (tracing off)."""
    return None if directory is None else StageTrace(directory / f"{service}-{os.getpid()}.jsonl")
