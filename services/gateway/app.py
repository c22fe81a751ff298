"""The gateway application: resources (Redis, Kafka producer, live hub, history, timekeeper)
held in one `Gateway` object on `app.state.gateway`, started and stopped with the app."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaProducer
from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from services.common import heap, kafka_auth, redis_client
from services.common.kafka_auth import KafkaAuth
from services.common.projection import Projection
from services.common.redis_keys import Keys
from services.common.settings import Settings

from . import errors
from .bot_cap import BotMatchCap
from .config import GatewayConfig
from .history import MatchHistory
from .identity import Authenticator
from .limits import BodyLimitMiddleware
from .live import LiveHub
from .metrics import Metrics, MetricsMiddleware
from .ratelimit import RateLimiter
from .results_feed import ResultsFeed
from .sse import ResultStream
from .stream_leases import StreamLeases
from .submit import Submitter
from .timekeeper import Timekeeper
from .tokens import SeatTokens

log = logging.getLogger("plylog.gateway")
STATIC_DIR = Path(__file__).parent / "static"
PRODUCER_START_TIMEOUT_S = 60.0
FEED_START_TIMEOUT_S = 10.0


@dataclass
class Gateway:
    settings: Settings
    config: GatewayConfig
    metrics: Metrics = field(default_factory=Metrics)
    redis: redis_client.AsyncClient | None = None
    producer: AIOKafkaProducer | None = None
    projection: Projection | None = None
    hub: LiveHub | None = None
    submitter: Submitter | None = None
    history: MatchHistory | None = None
    limiter: RateLimiter | None = None
    address_limiter: RateLimiter | None = None
    bot_cap: BotMatchCap | None = None
    auth: Authenticator | None = None
    stream: ResultStream | None = None
    tokens: SeatTokens | None = None
    feed: ResultsFeed | None = None
    leases: StreamLeases | None = None  # the live streams' cap per client address
    tasks: list[asyncio.Task] = field(default_factory=list)

    async def start(self) -> None:
        s, c = self.settings, self.config
        self.tokens = SeatTokens(c.secret)
        self.auth = Authenticator(c.secret, c.auth_mode, c.operator_key, c.jwt)
        self.producer = await _start_producer(s.kafka_bootstrap, s.kafka_auth)
        keys = Keys(c.redis_prefix, await _partitions(self.producer, s.topics.moves, s.partitions))
        # Many concurrent actions (a few hundred seat sockets) need more than the pool's 100 connections
        # at once: they wait for one rather than fail with "Redis is unavailable (MaxConnectionsError)".
        self.redis = redis_client.connect_async(
            s.redis, wait_for_connection_s=5, socket_connect_timeout=5, health_check_interval=30
        )
        self.projection = Projection(self.redis, keys)
        self.hub = LiveHub(
            redis_client.pubsub_client(s.redis, socket_connect_timeout=5),
            keys,
            reconnect=lambda attempt: redis_client.pubsub_client(s.redis, attempt, socket_connect_timeout=5),
        )
        self.tasks.append(asyncio.create_task(self.hub.run(), name="live-hub"))
        if c.early_results:
            self.feed = ResultsFeed(
                s.kafka_bootstrap,
                s.topics.results,
                self.hub.deliver_early,
                self.metrics.feed_records.inc,
                auth=s.kafka_auth,
            )
            self.feed.start()
            if not await asyncio.to_thread(self.feed.reading.wait, FEED_START_TIMEOUT_S):
                log.warning(
                    "results feed: not reading %s after %.0f s; seat sockets get the projector's "
                    "announcements until it does",
                    s.topics.results,
                    FEED_START_TIMEOUT_S,
                )
        self.submitter = Submitter(self.producer, s.topics.moves, self.hub, self.metrics, c.max_move_bytes)
        self.history = MatchHistory(
            s.kafka_bootstrap,
            s.topics.moves,
            self.projection.log_index,
            self.metrics.history_records.inc,
            budget_s=c.work_budget_ms / 1000,
            auth=s.kafka_auth,
        )
        cluster = redis_client.is_cluster(self.redis)
        self.limiter = RateLimiter(self.redis, keys.ratelimit, c.rate_per_s, c.rate_burst, cluster)
        self.address_limiter = RateLimiter(
            self.redis, keys.ratelimit_address, c.address_rate_per_s, c.address_rate_burst, cluster
        )
        self.bot_cap = BotMatchCap(self.redis, self.projection, c.bot_matches_per_player)
        self.stream = ResultStream(self.projection, self.hub, self.metrics, c.keepalive_s)
        self.leases = StreamLeases(self.redis, keys.streams, c.streams_per_client, c.stream_lease_s)
        self.tasks.append(asyncio.create_task(self.leases.run(), name="stream-leases"))
        if c.timekeeper_interval_s > 0:
            keeper = Timekeeper(self.projection, self.submitter, c.timekeeper_interval_s, self.metrics)
            self.tasks.append(asyncio.create_task(keeper.run(), name="timekeeper"))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.hub.connected.wait(), 10)
        # what start-up made lives as long as the gateway, and so do its sockets (services/common/heap.py)
        heap.settle(young_threshold=heap.GATEWAY_YOUNG_THRESHOLD)
        log.info(
            "gateway ready: Kafka %s (topic %s), Redis %s (prefix %r), rate limit %.0f/s burst %.0f, "
            "players: %s identities, operator key %s",
            s.kafka_bootstrap,
            s.topics.moves,
            s.redis_url,
            c.redis_prefix,
            c.rate_per_s,
            c.rate_burst,
            c.auth_mode,
            "set" if c.operator_key else "off",
        )

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.feed is not None:
            await asyncio.to_thread(self.feed.stop)
        if self.producer is not None:
            with contextlib.suppress(Exception):
                await self.producer.stop()
        if self.history is not None:
            await asyncio.to_thread(self.history.close)
        if self.leases is not None:
            await self.leases.close()
        if self.redis is not None:
            await self.redis.aclose()
        if self.hub is not None:
            await self.hub.close()


async def _start_producer(bootstrap: str, auth: KafkaAuth | None = None) -> AIOKafkaProducer:
    """A started producer; retries while the broker is not up yet (e.g. right after `plylog up`)."""
    deadline = asyncio.get_running_loop().time() + PRODUCER_START_TIMEOUT_S
    while True:
        # linger 0: a lone move goes out at once (1 ms of the lone client's ~8 ms was the linger);
        # under load moves still batch, behind the one request aiokafka keeps in flight per broker
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            linger_ms=0,
            enable_idempotence=True,
            request_timeout_ms=15000,
            **kafka_auth.aiokafka(auth),
        )
        try:
            await producer.start()
            return producer
        except Exception as error:
            with contextlib.suppress(Exception):
                await producer.stop()
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"cannot connect to Kafka at {bootstrap}: {error}") from error
            log.warning("Kafka at %s not reachable yet (%s); retrying", bootstrap, error)
            await asyncio.sleep(1.0)


async def _partitions(producer: AIOKafkaProducer, topic: str, configured: int) -> int:
    """Partitions of plylog.moves as Kafka has them (the projection keeps keys per partition)."""
    found = await producer.partitions_for(topic)
    if not found:
        log.warning("topic %s not found; assuming PLYLOG_PARTITIONS=%d partitions", topic, configured)
        return configured
    return len(found)


def create_app(settings: Settings | None = None, config: GatewayConfig | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    config = config or GatewayConfig.from_env(settings.home)
    gateway = Gateway(settings, config)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await gateway.start()
        try:
            yield
        finally:
            await gateway.stop()

    app = FastAPI(
        title="plylog gateway",
        version="1",
        description="Play, watch and replay plylog matches: seat tokens, live streams (SSE), time travel, "
        'leaderboards. Errors are JSON: `{"error": {"code", "message"}}`.',
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    errors.install(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=config.max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=gateway.metrics)
    if config.trusted_proxies:  # the client: the right-most X-Forwarded-For hop that is not one of them
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=sorted(config.trusted_proxies))
    from .api import router
    from .ops import router as ops_router
    from .seat_socket import router as socket_router

    app.include_router(router)
    app.include_router(ops_router)  # /livez, /readyz
    app.include_router(socket_router)  # the seat socket, GET /v1/matches/{id}/play (WebSocket)
    if (STATIC_DIR / "index.html").is_file():
        app.mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="web")
    else:

        @app.get("/", include_in_schema=False)
        async def _root() -> RedirectResponse:
            return RedirectResponse("/docs")

    return app
