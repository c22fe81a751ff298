"""Server-Sent Events of a match's results, resumable without gaps.

Order of work: register a live listener FIRST, then read the backlog (accepted results after
the client's Last-Event-ID, from the log zset), then forward live results; accepted results
are deduplicated by seq, so a result both in the backlog and live is sent once. A gap in the
live seqs (or a listener that overflowed or lived through a reconnect) is filled from the zset.

A seat's socket listens `early` (live.py): each result comes from the topic and again from the
projector. An early copy of an accepted result is taken only when it is the next seq (else its
announcement, after the projector stored the results before it, fills the gap from the zset);
rejected and duplicate results, which no seq orders, are kept once by their bytes.

Events: `result` (an accepted result; `id` = its seq) and `rejected` (no id: it changes
nothing). Data is the result record as JSON; results read back from the log carry no `view`,
except the newest, which carries the current one. `: keep-alive` comments every few seconds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

from services.common.projection import Projection

from .live import Arrival, Listener, LiveHub
from .metrics import Metrics

RETRY_MS = 2000
RECENT_KEPT = 256  # rejected or duplicate results an early stream remembers (their hashes) to keep once


def format_event(result: dict[str, Any]) -> str:
    data = orjson.dumps(result).decode()
    if result.get("status") == "accepted":
        return f"id: {result['seq']}\nevent: result\ndata: {data}\n\n"
    return f"event: rejected\ndata: {data}\n\n"


def from_log(match_id: str, entry: dict[str, Any], view: dict[str, Any] | None) -> dict[str, Any]:
    """A log zset entry in the shape of a result record."""
    return {
        "v": 1,
        "event_id": entry.get("event_id"),
        "match_id": match_id,
        "player": entry.get("player"),
        "status": "accepted",
        "seq": entry["seq"],
        "duplicate": False,
        "events": entry.get("events", []),
        "view": view,
        "at": entry.get("at"),
    }


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
                async for result in self.results(match_id, last_seq, listener):
                    yield ": keep-alive\n\n" if result is None else format_event(result)
        finally:
            self._metrics.streams.dec()

    async def results(
        self, match_id: str, last_seq: int, listener: Listener, keep: Callable[[dict[str, Any]], bool] | None = None
    ) -> AsyncIterator[dict[str, Any] | None]:
        """The match's results for a listener registered before this is called: every accepted one
        after `last_seq` exactly once, in seq order (the backlog first, gaps filled from the log), the
        rejected ones as they come, and None after each keep-alive interval without any. Accepted
        results that change nothing (duplicates, repeats) are left out unless `keep` says otherwise."""
        sent = last_seq
        for result, sent in await self._backlog(match_id, sent):  # noqa: B007, B020 - `sent` ends at the last
            yield result
        while True:
            arrival = await listener.get(self._keepalive_s)
            if listener.resync:
                listener.resync = False
                for missed, sent in await self._backlog(match_id, sent):  # noqa: B007, B020 - as above
                    yield missed
            if arrival is None:
                yield None
                continue
            if listener.early and not _first_copy(arrival, sent, listener.seen):
                continue
            out = await self._live(match_id, arrival.result, sent, keep)
            if out and arrival.early:
                self._metrics.early_results.inc()
            for fresh, sent in out:  # noqa: B007 - as above
                yield fresh

    async def _backlog(self, match_id: str, after: int) -> list[tuple[dict[str, Any], int]]:
        entries, view, view_seq = await self._projection.log_since_with_view(match_id, after)
        out = []
        for entry in entries:
            if entry["seq"] > after:
                after = entry["seq"]
                out.append((from_log(match_id, entry, view if after == view_seq else None), after))
        return out

    async def _live(
        self, match_id: str, result: dict[str, Any], sent: int, keep: Callable[[dict[str, Any]], bool] | None
    ) -> list[tuple[dict[str, Any], int]]:
        if result.get("status") != "accepted":
            return [(result, sent)]
        seq = result.get("seq", 0)
        if result.get("duplicate") or seq <= sent:
            return [(result, sent)] if keep is not None and keep(result) else []
        out = []
        if seq > sent + 1:  # missed some (should not happen): fill from the log first
            out = [(entry, s) for entry, s in await self._backlog(match_id, sent) if s < seq]
        out.append((result, seq))
        return out


def _first_copy(arrival: Arrival, sent: int, seen: OrderedDict[int, None]) -> bool:
    """Whether an early listener's stream takes `arrival` (the other copy of each is left out).
    `seen` gets the digest of each copy taken from the topic (the hub then leaves out its
    announcement) and of each rejected or duplicate result (kept once by its bytes)."""
    result = arrival.result
    if result.get("status") == "accepted" and not result.get("duplicate"):
        # ordered by seq (`_live`); an early copy past the next seq waits for its announcement
        if arrival.early and result.get("seq", 0) > sent + 1:
            return False
        if arrival.early:
            _remember(seen, hash(arrival.raw))
        return True
    digest = hash(arrival.raw)
    if digest in seen:
        return False
    _remember(seen, digest)
    return True


def _remember(seen: OrderedDict[int, None], digest: int) -> None:
    seen[digest] = None
    if len(seen) > RECENT_KEPT:
        seen.popitem(last=False)
