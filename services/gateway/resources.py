"""The gateway's resources (Redis, the Kafka producer, the live hub, the history, the rate limits, ...):
built once when the app starts (`open_resources`, the lifespan), closed when it stops, and handed to
routes as FastAPI dependencies.

A route declares what it uses by type, e.g. `projection: ProjectionDep`; nothing else reaches the
resources. Each dependency is resolved once per request (or per socket, when it opens), never per
socket message. A new resource: a field of `Resources`, built (and its closing registered) in
`open_resources`, and a `...Dep` alias below (docs/contributing.md, "The gateway's code, and
adding a route").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends
from starlette.requests import HTTPConnection

from services.common import heap, redis_client
from services.common.kafka_produce import Producer
from services.common.kafka_tail import TopicTail
from services.common.profile_tables import ProfileTables
from services.common.projection import Projection
from services.common.redis_keys import Keys
from services.common.settings import Settings

from .auth import Access
from .bot_cap import BotMatchCap
from .config import GatewayConfig
from .health import Health
from .history import MatchHistory
from .identity import Authenticator
from .live import LiveHub
from .lobby_desk import LobbyDesk
from .metrics import Metrics
from .names import Names
from .positions import Positions
from .ratelimit import RateLimiter
from .socket_session import SeatSockets
from .sse import ResultStream
from .stream_leases import StreamLeases
from .submit import Submitter
from .timekeeper import Timekeeper
from .tokens import SeatTokens
from .tournament_desk import TournamentDesk

log = logging.getLogger("plylog.gateway")
PRODUCER_START_TIMEOUT_S = 60.0
FEED_START_TIMEOUT_S = 10.0
HUB_START_WAIT_S = 10.0


@dataclass(frozen=True)
class Resources:
    config: GatewayConfig
    metrics: Metrics
    projection: Projection
    hub: LiveHub
    access: Access
    submitter: Submitter
    positions: Positions
    bot_cap: BotMatchCap
    stream: ResultStream
    leases: StreamLeases
    seat_sockets: SeatSockets
    health: Health
    lobby: LobbyDesk
    tournaments: TournamentDesk
    names: Names


@asynccontextmanager
async def open_resources(settings: Settings, config: GatewayConfig, metrics: Metrics) -> AsyncIterator[Resources]:
    """The gateway's resources, started; on leaving, closed in the reverse order (also when starting failed)."""
    s, c = settings, config
    async with AsyncExitStack() as stack:
        producer = await Producer.start(
            s.kafka_bootstrap, s.kafka_auth, request_timeout_s=15, retry_for_s=PRODUCER_START_TIMEOUT_S
        )
        stack.push_async_callback(producer.stop)
        keys = Keys(c.redis_prefix, await _partitions(producer, s.topics.moves, s.partitions))
        # Many concurrent actions (a few hundred seat sockets) need more than the pool's 100 connections
        # at once: they wait for one rather than fail with "Redis is unavailable (MaxConnectionsError)".
        redis = redis_client.connect_async(
            s.redis, wait_for_connection_s=5, socket_connect_timeout=5, health_check_interval=30
        )
        stack.push_async_callback(redis.aclose)
        projection = Projection(redis, keys)
        hub = LiveHub(
            redis_client.pubsub_client(s.redis, socket_connect_timeout=5),
            keys,
            reconnect=lambda attempt: redis_client.pubsub_client(s.redis, attempt, socket_connect_timeout=5),
        )
        stack.push_async_callback(hub.close)
        _run_task(stack, hub.run(), "live-hub")
        if c.early_results:
            # the seat sockets' early results (live.py): every result, from the topic's end
            feed = TopicTail(
                s.kafka_bootstrap,
                s.topics.results,
                hub.deliver_early,
                metrics.feed_records.inc,
                auth=s.kafka_auth,
                name="plylog-gateway-feed",
            )
            await _start_feed(stack, feed, s.topics.results)
        submitter = Submitter(producer, s.topics.moves, hub, metrics, c.max_move_bytes, c.wait_timeout_s)
        history = MatchHistory(
            s.kafka_bootstrap,
            s.topics.moves,
            projection.log_index,
            metrics.history_records.inc,
            budget_s=c.work_budget_ms / 1000,
            auth=s.kafka_auth,
        )
        stack.push_async_callback(asyncio.to_thread, history.close)
        access = _build_access(c, redis, keys, projection, metrics)
        positions = Positions(history, projection, c.legal_actions_cap, c.work_budget_ms / 1000)
        stream = ResultStream(projection, hub, metrics, c.keepalive_s)
        leases = StreamLeases(redis, keys.streams, c.streams_per_client, c.stream_lease_s)
        stack.push_async_callback(leases.close)
        _run_task(stack, leases.run(), "stream-leases")
        if c.timekeeper_interval_s > 0:
            keeper = Timekeeper(projection, submitter, c.timekeeper_interval_s, metrics)
            _run_task(stack, keeper.run(), "timekeeper")
        names = await _open_names(stack, s, producer, redis, keys)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(hub.connected.wait(), HUB_START_WAIT_S)
        resources = Resources(
            config=c,
            metrics=metrics,
            projection=projection,
            hub=hub,
            access=access,
            submitter=submitter,
            positions=positions,
            bot_cap=BotMatchCap(redis, projection, c.bot_matches_per_player),
            stream=stream,
            leases=leases,
            seat_sockets=SeatSockets(
                access, projection, hub, stream, submitter, positions, leases, metrics, c.socket_queue, c.wait_timeout_s
            ),
            health=Health(redis.ping, producer.ping, hub),
            lobby=LobbyDesk(producer, redis, keys, s.topics.lobby, projection),
            tournaments=TournamentDesk(producer, redis, s.topics.tournaments, c.redis_prefix),
            names=names,
        )
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
        yield resources


def _build_access(
    c: GatewayConfig, redis: redis_client.AsyncClient, keys: Keys, projection: Projection, metrics: Metrics
) -> Access:
    cluster = redis_client.is_cluster(redis)
    return Access(
        SeatTokens(c.secret),
        Authenticator(c.secret, c.auth_mode, c.operator_key, c.jwt),
        RateLimiter(redis, keys.ratelimit, c.rate_per_s, c.rate_burst, cluster),
        RateLimiter(redis, keys.ratelimit_address, c.address_rate_per_s, c.address_rate_burst, cluster),
        projection,
        metrics,
    )


async def _open_names(
    stack: AsyncExitStack, s: Settings, producer: Producer, redis: redis_client.AsyncClient, keys: Keys
) -> Names:
    """Players' keys and profiles, read from their compacted topics into memory (names.py)."""
    tables = ProfileTables.reading(s.kafka_bootstrap, s.topics, s.kafka_auth, "plylog-gateway")
    stack.push_async_callback(asyncio.to_thread, tables.stop)
    names = Names(producer, s.topics, tables, redis, keys.prefix)
    if not await names.wait_ready():
        log.warning("profiles: %s not read within %.0f s; names show as ids until they are", s.topics.personal(), 10)
    return names


def _run_task(stack: AsyncExitStack, work: Coroutine[Any, Any, None], name: str) -> None:
    """Run `work` until the resources close (cancelled then, before what was opened before it closes)."""
    task = asyncio.create_task(work, name=name)

    async def cancel() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    stack.push_async_callback(cancel)


async def _start_feed(stack: AsyncExitStack, feed: TopicTail, topic: str) -> None:
    feed.start()
    stack.push_async_callback(asyncio.to_thread, feed.stop)
    if not await asyncio.to_thread(feed.reading.wait, FEED_START_TIMEOUT_S):
        log.warning(
            "results feed: not reading %s after %.0f s; seat sockets get the projector's announcements until it does",
            topic,
            FEED_START_TIMEOUT_S,
        )


async def _partitions(producer: Producer, topic: str, configured: int) -> int:
    """Partitions of plylog.moves as Kafka has them (the projection keeps keys per partition)."""
    found = await producer.partitions(topic)
    if not found:
        log.warning("topic %s not found; assuming PLYLOG_PARTITIONS=%d partitions", topic, configured)
        return configured
    return found


# --- the dependencies routes declare ---------------------------------------------------------------
# Each is `async def` (FastAPI runs a plain `def` dependency in a thread) and reads the lifespan's
# state, which uvicorn hands to every request and socket.
def resources_of(connection: HTTPConnection) -> Resources:
    resources: Resources = connection.state.resources
    return resources


async def _config(connection: HTTPConnection) -> GatewayConfig:
    return resources_of(connection).config


async def _metrics(connection: HTTPConnection) -> Metrics:
    return resources_of(connection).metrics


async def _projection(connection: HTTPConnection) -> Projection:
    return resources_of(connection).projection


async def _access(connection: HTTPConnection) -> Access:
    return resources_of(connection).access


async def _submitter(connection: HTTPConnection) -> Submitter:
    return resources_of(connection).submitter


async def _positions(connection: HTTPConnection) -> Positions:
    return resources_of(connection).positions


async def _bot_cap(connection: HTTPConnection) -> BotMatchCap:
    return resources_of(connection).bot_cap


async def _stream(connection: HTTPConnection) -> ResultStream:
    return resources_of(connection).stream


async def _leases(connection: HTTPConnection) -> StreamLeases:
    return resources_of(connection).leases


async def _seat_sockets(connection: HTTPConnection) -> SeatSockets:
    return resources_of(connection).seat_sockets


async def _lobby(connection: HTTPConnection) -> LobbyDesk:
    return resources_of(connection).lobby


async def _health(connection: HTTPConnection) -> Health:
    return resources_of(connection).health


async def _tournaments(connection: HTTPConnection) -> TournamentDesk:
    return resources_of(connection).tournaments


async def _names(connection: HTTPConnection) -> Names:
    return resources_of(connection).names


ConfigDep = Annotated[GatewayConfig, Depends(_config)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
ProjectionDep = Annotated[Projection, Depends(_projection)]  # the read side of the projection in Redis
AccessDep = Annotated[Access, Depends(_access)]  # credentials, seat claims, rate limits
SubmitterDep = Annotated[Submitter, Depends(_submitter)]  # writes move records (and waits for results)
PositionsDep = Annotated[Positions, Depends(_positions)]  # positions refolded from the log
BotCapDep = Annotated[BotMatchCap, Depends(_bot_cap)]
StreamDep = Annotated[ResultStream, Depends(_stream)]  # a match's results, in order, live
LeasesDep = Annotated[StreamLeases, Depends(_leases)]  # the cap on live streams per client address
SeatSocketsDep = Annotated[SeatSockets, Depends(_seat_sockets)]
HealthDep = Annotated[Health, Depends(_health)]
LobbyDep = Annotated[LobbyDesk, Depends(_lobby)]  # seeks and pools: plylog.lobby and the matchmaker's view
TournamentsDep = Annotated[TournamentDesk, Depends(_tournaments)]  # tournament records and views
NamesDep = Annotated[Names, Depends(_names)]  # display names from players' sealed profiles; erasure
