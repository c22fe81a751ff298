"""The gateway's probes for orchestrators (beside /healthz and /metrics in api.py):

GET /livez   200 while the event loop answers (nothing else is checked: a restart would not help
             a gateway whose Redis or Kafka is away)
GET /readyz  200 when it can serve: Redis answers, Kafka answers metadata, the live hub is
             subscribed; else 503 with the failing check (take it out of the load balancer)
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from .auth import gw

router = APIRouter(tags=["ops"])


@router.get("/livez", summary="200 while the gateway's event loop answers")
async def livez() -> Any:
    return {"status": "ok"}


@router.get("/readyz", summary="200 when Redis, Kafka and the live hub are up, else 503")
async def readyz(request: Request) -> Any:
    gateway = gw(request)
    checks: dict[str, str] = {
        "live": "ok" if gateway.hub is not None and gateway.hub.connected.is_set() else "disconnected"
    }
    for name, probe in (
        ("redis", lambda: gateway.redis.ping()),
        ("kafka", lambda: gateway.producer.client.fetch_all_metadata()),
    ):
        try:
            await asyncio.wait_for(probe(), 2)
            checks[name] = "ok"
        except Exception as error:  # noqa: BLE001 - any failure: not ready
            checks[name] = f"error: {type(error).__name__}: {error}"
    ready = all(value == "ok" for value in checks.values())
    return JSONResponse({"status": "ok" if ready else "unavailable", **checks}, 200 if ready else 503)
