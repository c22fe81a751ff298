"""The gateway application: its middleware and routers, and a lifespan that opens its resources
(resources.py) when it starts and closes them when it stops. Routes get the resources they use as
FastAPI dependencies (docs/contributing.md, "The gateway's code, and adding a route")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from services.common.settings import Settings

from . import api, errors, lobby, notify_api, ops, people, play, players, seat_socket, tournaments
from .config import GatewayConfig
from .keys_api import keys_router
from .limits import BodyLimitMiddleware
from .metrics import Metrics, MetricsMiddleware
from .resources import open_resources

STATIC_DIR = Path(__file__).parent / "static"


def create_app(settings: Settings, config: GatewayConfig) -> FastAPI:
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        async with open_resources(settings, config, metrics) as resources:
            yield {"resources": resources}  # the state every request and socket gets (resources.resources_of)

    app = FastAPI(
        title="plylog gateway",
        version="1",
        description="Play, watch and replay plylog matches: seat tokens, live streams (SSE), time travel, "
        'leaderboards. Errors are JSON: `{"error": {"code", "message"}}`.',
        lifespan=lifespan,
    )
    errors.install(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes, timeout_s=config.body_timeout_s)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    if config.trusted_proxies:  # the client: the right-most X-Forwarded-For hop that is not one of them
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=sorted(config.trusted_proxies))
    app.include_router(play.router)  # identities, create, join, tokens, actions, legal actions
    app.include_router(api.router)  # the lobby, views, events, positions, SSE, leaderboards, stats
    app.include_router(notify_api.router)  # notification endpoints and preferences
    app.include_router(players.router)  # my games, rating history, recent matches
    app.include_router(people.router)  # display names from sealed profiles; the operator's erasure
    app.include_router(lobby.router)  # seeks and pools (the matchmaker decides them)
    app.include_router(tournaments.router)  # tournaments: create, register, withdraw, views, SSE
    app.include_router(keys_router(settings.receipt_keys_dir))  # GET /v1/keys: the receipts' public keys
    app.include_router(ops.router)  # /healthz, /livez, /readyz, /metrics
    app.include_router(seat_socket.router)  # the seat socket, GET /v1/matches/{id}/play (WebSocket)
    if (STATIC_DIR / "index.html").is_file():
        app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="web")
    else:

        @app.get("/", include_in_schema=False)
        async def _root() -> RedirectResponse:
            return RedirectResponse("/docs")

    return app
