"""Precomputed tables the bots read: built by code in this package (`python -m
games.bots.build_tables`), stored as JSON in games/bots/data/, and computed in memory when a
file or an entry is missing, so a bot never depends on the files being there."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data")


@cache
def load(name: str) -> dict[str, Any]:
    """The table `data/<name>.json`, or {} when it was not built."""
    path = DATA / f"{name}.json"
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def save(name: str, table: dict[str, Any]) -> Path:
    path = DATA / f"{name}.json"
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    load.cache_clear()
    return path
