"""RFC 3339 timestamps of move records as integer milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime


def to_ms(at: str) -> int:
    """Milliseconds since the epoch of an RFC 3339 UTC timestamp (already schema-checked)."""
    if at[-1] in "zZ":
        at = at[:-1] + "+00:00"
    head, dot, frac = at[:-6].partition(".")
    if dot and len(frac) > 6:  # datetime stops at microseconds; finer digits cannot matter here
        at = f"{head}.{frac[:6]}{at[-6:]}"
    return round(datetime.fromisoformat(at).timestamp() * 1000)


def from_ms(ms: int) -> str:
    """RFC 3339 text (UTC, milliseconds) of an epoch-milliseconds value."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
