"""What the gateway's probes check (GET /healthz, /readyz in ops.py): Redis answers, Kafka answers
metadata, the live hub is subscribed. One of the gateway's resources (resources.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .live import LiveHub


class Health:
    def __init__(
        self, redis_ping: Callable[[], Awaitable[Any]], kafka_ping: Callable[[], Awaitable[Any]], hub: LiveHub
    ):
        self._probes = {"redis": redis_ping, "kafka": kafka_ping}
        self._hub = hub

    async def checks(self, timeouts_s: dict[str, float]) -> dict[str, str]:
        """{"live", "redis", "kafka"}: "ok", "disconnected" or "error: <type>: <message>"; each probe
        waited for at most its timeout."""
        checks = {"live": "ok" if self._hub.connected.is_set() else "disconnected"}
        for name, probe in self._probes.items():
            try:
                await asyncio.wait_for(probe(), timeouts_s[name])
                checks[name] = "ok"
            except Exception as error:  # noqa: BLE001 - any failure is reported in the answer
                checks[name] = f"error: {type(error).__name__}: {error}"
        return checks
