"""The tails of the stack's logs (what a failed command shows)."""

from __future__ import annotations

import os
from pathlib import Path


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def tail(path: Path | None, lines: int = 20, since: int = 0) -> list[str]:
    """The last `lines` lines of `path`, counting only bytes from offset `since` on."""
    if path is None:
        return []
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            if size < since:  # rotated or truncated: show the new file
                since = 0
            fh.seek(max(since, size - 64 * 1024))
            data = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    return data.splitlines()[-lines:]
