"""Building move records and producing them to `plylog.moves`, optionally waiting for the result."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import orjson

from games.timeutil import from_ms
from schemas.base import MAX_RECORD_BYTES
from services.common.kafka_produce import ProduceFailed, Producer

from .errors import ApiError
from .live import LiveHub
from .metrics import Metrics

log = logging.getLogger("plylog.gateway.submit")
HUB_WAIT_S = 2.0
MAX_WAIT_S = 60.0  # the longest wait a client may ask for (`timeout`)


def new_event_id() -> str:
    return uuid.uuid4().hex


def move_record(
    match_id: str,
    player: str,
    action: dict[str, Any],
    event_id: str | None = None,
    expected_seq: int | None = None,
    now_ms: int | None = None,
) -> dict[str, Any]:
    """The contract's move record; `at` is now (UTC, milliseconds) unless given."""
    record: dict[str, Any] = {
        "v": 1,
        "event_id": event_id or new_event_id(),
        "match_id": match_id,
        "player": player,
        "at": from_ms(now_ms if now_ms is not None else int(time.time() * 1000)),
        "action": action,
    }
    if expected_seq is not None:
        record["expected_seq"] = expected_seq
    return record


class Submitter:
    def __init__(
        self,
        producer: Producer,
        topic: str,
        hub: LiveHub,
        metrics: Metrics,
        max_bytes: int = MAX_RECORD_BYTES,
        wait_timeout_s: float = 10.0,
    ):
        self._producer = producer
        self._wait_timeout_s = wait_timeout_s  # PLYLOG_WAIT_TIMEOUT_S: a wait for which none was asked
        self._max_bytes = max_bytes  # the door's cap (PLYLOG_MAX_MOVE_BYTES), below the contract's
        self._topic = topic
        self._hub = hub
        self._metrics = metrics

    async def submit(
        self, record: dict[str, Any], wait: bool = False, timeout_s: float | None = None
    ) -> dict[str, Any] | None:
        """Produce the record (acknowledged by the broker). With `wait`, return its result
        record, or None when none came within `timeout_s` (at most MAX_WAIT_S; None: PLYLOG_WAIT_TIMEOUT_S)."""
        timeout_s = self._wait_timeout_s if timeout_s is None else min(timeout_s, MAX_WAIT_S)
        try:
            raw = orjson.dumps(record)
        except orjson.JSONEncodeError as error:  # e.g. an integer beyond 64 bits
            raise ApiError(422, "malformed", f"the action cannot be encoded as JSON: {error}") from None
        if len(raw) > self._max_bytes:
            raise ApiError(
                413,
                "too_large",
                f"the move record would be {len(raw)} bytes; the limit is {self._max_bytes} (PLYLOG_MAX_MOVE_BYTES)",
            )
        if not wait:
            await self._produce(record, raw)
            return None
        if not self._hub.connected.is_set():
            try:
                await asyncio.wait_for(self._hub.connected.wait(), HUB_WAIT_S)
            except TimeoutError:
                log.warning("waiting for a result while the live hub is disconnected; it may time out")
        with self._hub.listen(record["match_id"]) as listener:  # listen BEFORE producing
            started = time.perf_counter()
            await self._produce(record, raw)
            deadline = started + timeout_s
            while (left := deadline - time.perf_counter()) > 0:
                arrival = await listener.get(left)
                result = arrival.result if arrival is not None else None
                if result is not None and result.get("event_id") == record["event_id"]:
                    self._metrics.wait_latency.labels(result.get("status", "?")).observe(time.perf_counter() - started)
                    return result
        self._metrics.wait_timeouts.inc()
        return None

    async def _produce(self, record: dict[str, Any], raw: bytes) -> None:
        try:
            await self._producer.send(self._topic, raw, key=record["match_id"].encode())
        except ProduceFailed as error:
            log.warning("producing %s to %s failed: %s", record["event_id"], self._topic, error)
            why = type(error.__cause__ or error).__name__
            raise ApiError(
                503, "unavailable", f"the move could not be written to Kafka ({why}); retry with the same event_id"
            ) from error
        self._metrics.actions.labels(
            record["action"].get("type", "?") if isinstance(record["action"], dict) else "?"
        ).inc()
