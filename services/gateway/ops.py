"""The gateway's probes and metrics:

GET /healthz  200 when Kafka and Redis answer, else 503
GET /livez    200 while the event loop answers (nothing else is checked: a restart would not help
              a gateway whose Redis or Kafka is away)
GET /readyz   200 when it can serve: Redis answers, Kafka answers metadata, the live hub is
              subscribed; else 503 with the failing check (take it out of the load balancer)
GET /metrics  Prometheus metrics (text format)
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from .metrics import CONTENT_TYPE_LATEST
from .resources import HealthDep, MetricsDep

router = APIRouter(tags=["ops"])


@router.get("/healthz", summary="200 when Kafka and Redis answer, else 503")
async def healthz(health: HealthDep) -> Any:
    checks = await health.checks({"redis": 2, "kafka": 3})
    healthy = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ok" if healthy else "unhealthy", **checks}, 200 if healthy else 503)


@router.get("/metrics", summary="Prometheus metrics (text format)")
async def metrics(metrics: MetricsDep) -> Response:
    return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)


@router.get("/livez", summary="200 while the gateway's event loop answers")
async def livez() -> Any:
    return {"status": "ok"}


@router.get("/readyz", summary="200 when Redis, Kafka and the live hub are up, else 503")
async def readyz(health: HealthDep) -> Any:
    checks = await health.checks({"redis": 2, "kafka": 2})
    ready = all(value == "ok" for value in checks.values())
    return JSONResponse({"status": "ok" if ready else "unavailable", **checks}, 200 if ready else 503)
