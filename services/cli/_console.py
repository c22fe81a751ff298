"""What the stack commands print: one console, a line per step, paths relative to the working directory."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from rich.console import Console

out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def say(msg: str) -> None:
    out.print(msg, soft_wrap=True)


def rel(p: Path | str) -> str:
    p = Path(p)
    with contextlib.suppress(ValueError):
        return str(p.relative_to(Path.cwd()))
    return str(p)
