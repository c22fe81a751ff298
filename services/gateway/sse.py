"""Server-Sent Events of a match's results, resumable without gaps.

Order of work: register a live listener FIRST, then read the backlog (accepted results after
the client's Last-Event-ID, from the log zset), then forward live results; accepted results
are deduplicated by seq, so a result both in the backlog and live is sent once. A gap in the
live seqs (or a listener that overflowed or lived through a reconnect) is filled from the zset.

Events: `result` (an accepted result; `id` = its seq) and `rejected` (no id: it changes
nothing). Data is the result record as JSON; results read back from the log carry no `view`,
except the newest, which carries the current one. `: keep-alive` comments every few seconds.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Optional

import orjson

from services.common.projection import Projection

from .live import LiveHub, Listener
from .metrics import Metrics

RETRY_MS = 2000


def format_event(result: dict[str, Any]) -> str:
    data = orjson.dumps(result).decode()
    if result.get("status") == "accepted":
        return f"id: {result['seq']}\nevent: result\ndata: {data}\n\n"
    return f"event: rejected\ndata: {data}\n\n"


def from_log(match_id: str, entry: dict[str, Any], view: Optional[dict[str, Any]]) -> dict[str, Any]:
    """A log zset entry in the shape of a result record."""
    return {"v": 1, "event_id": entry.get("event_id"), "match_id": match_id, "player": entry.get("player"),
            "status": "accepted", "seq": entry["seq"], "duplicate": False, "events": entry.get("events", []),
            "view": view, "at": entry.get("at")}


class ResultStream:
    def __init__(self, projection: Projection, hub: LiveHub, metrics: Metrics, keepalive_s: float):
        self._projection = projection
        self._hub = hub
        self._metrics = metrics
        self._keepalive_s = keepalive_s

    async def events(self, match_id: str, last_seq: int) -> AsyncIterator[str]:
        self._metrics.streams.inc()
        try:
            with self._hub.listen(match_id) as listener:
                yield f"retry: {RETRY_MS}\n\n"
                sent = last_seq
                for chunk, sent in await self._backlog(match_id, sent):
                    yield chunk
                while True:
                    result = await listener.get(self._keepalive_s)
                    if listener.resync:
                        listener.resync = False
                        for chunk, sent in await self._backlog(match_id, sent):
                            yield chunk
                    if result is None:
                        yield ": keep-alive\n\n"
                        continue
                    for chunk, sent in await self._live(match_id, result, sent, listener):
                        yield chunk
        finally:
            self._metrics.streams.dec()

    async def _backlog(self, match_id: str, after: int) -> list[tuple[str, int]]:
        entries, view, view_seq = await self._projection.log_since_with_view(match_id, after)
        out = []
        for entry in entries:
            if entry["seq"] > after:
                after = entry["seq"]
                out.append((format_event(from_log(match_id, entry, view if after == view_seq else None)), after))
        return out

    async def _live(self, match_id: str, result: dict[str, Any], sent: int,
                    listener: Listener) -> list[tuple[str, int]]:
        if result.get("status") != "accepted":
            return [(format_event(result), sent)]
        seq = result.get("seq", 0)
        if result.get("duplicate") or seq <= sent:
            return []
        out = []
        if seq > sent + 1:  # missed some (should not happen): fill from the log first
            out = [(chunk, s) for chunk, s in await self._backlog(match_id, sent) if s < seq]
        out.append((format_event(result), seq))
        return out
