"""The match-id grammar at the command line: a match id is checked before it goes into a URL, a
Kafka key filter or a Redis key (`M/../x` or `M:log` never reach the gateway or Redis)."""

from __future__ import annotations

import typer

from schemas.base import MATCH_ID_RULE, is_match_id


def checked_match_id(value: str | None) -> str | None:
    """Typer callback of every MATCH argument and --match option (schemas.base.is_match_id)."""
    if value is not None and not is_match_id(value):
        raise typer.BadParameter(f"{value[:80]!r} is not a match id ({MATCH_ID_RULE})")
    return value
