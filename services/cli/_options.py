"""`--option KEY=VALUE` of the commands that take game options (new, bot-eval)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ._errors import CliError


def parse_options(pairs: Iterable[str] | None) -> dict[str, Any]:
    """{KEY: VALUE} with VALUE read as JSON (5, true, [1, 2]), else as a bare string (small-5)."""
    options: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--option {pair!r} is not KEY=VALUE", "e.g. --option layout=small-4 --option pegs=5")
        try:
            options[key] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            options[key] = raw
    return options
