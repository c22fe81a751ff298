"""Prometheus metrics of the gateway (text format at /metrics), in a registry per app."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_TYPE_LATEST", "Metrics", "MetricsMiddleware"]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "plylog_gateway_requests",
            "HTTP requests by route template, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.actions = Counter(
            "plylog_gateway_actions_produced",
            "move records produced to plylog.moves, by kind",
            ["kind"],
            registry=self.registry,
        )
        self.wait_latency = Histogram(
            "plylog_gateway_wait_seconds",
            "time from producing a move record to its result (wait=true)",
            ["status"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.wait_timeouts = Counter(
            "plylog_gateway_wait_timeouts", "waits that ended without a result", registry=self.registry
        )
        self.rate_limited = Counter("plylog_gateway_rate_limited", "actions refused with 429", registry=self.registry)
        self.timeout_claims = Counter(
            "plylog_gateway_timeout_claims", "claim_timeout records the timekeeper produced", registry=self.registry
        )
        self.streams = Gauge("plylog_gateway_open_streams", "open SSE streams", registry=self.registry)
        self.sockets = Gauge(
            "plylog_gateway_open_sockets", "open seat sockets (GET /v1/matches/{id}/play)", registry=self.registry
        )
        self.socket_closes = Counter(
            "plylog_gateway_socket_closes",
            "seat sockets the gateway closed, by close code",
            ["code"],
            registry=self.registry,
        )
        self.history_records = Counter(
            "plylog_gateway_history_records_read",
            "move records read from plylog.moves to refold matches (time travel, legal actions)",
            registry=self.registry,
        )

        self.early_results = Counter(
            "plylog_gateway_early_results",
            "results seat sockets took from plylog.results before the projector announced them",
            registry=self.registry,
        )
        self.feed_records = Counter(
            "plylog_gateway_results_feed_records",
            "records the gateway read from plylog.results for its seat sockets",
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Counts every request by its route template (e.g. /v1/matches/{match_id}), method and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or ("static" if route is not None else "unmatched")
            self.metrics.requests.labels(template, scope["method"], str(status)).inc()
