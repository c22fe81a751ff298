"""Clients of the projection's Redis: one server or a Redis Cluster, from REDIS_URL
(`services.common.settings.RedisTarget`: `redis://host:port/db` or
`redis+cluster://host:port,host:port`).

Every plylog process makes its Redis clients here, so the rest of the code does not care which
of the two it talks to: the key layout (`services.common.redis_keys`) keeps every key one script
or one MULTI touches in one hash slot, and the few operations that span the whole keyspace (the
wipe of `plylog rebuild`, CLIENT LIST, SCAN) go to every node through `nodes`.
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode as AsyncClusterNode
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import ClusterNode, RedisCluster

from .settings import RedisTarget

DEFAULT_MAX_CONNECTIONS = 100  # redis-py's own default
SyncClient = redis.Redis | RedisCluster
AsyncClient = aioredis.Redis | AsyncRedisCluster


def connect(target: RedisTarget | str, **options: Any) -> SyncClient:
    """A redis-py client (bytes answers) for `target`; `options` go to every connection
    (client_name, socket timeouts, ...)."""
    target = RedisTarget.parse(target) if isinstance(target, str) else target
    if not target.cluster:
        return redis.Redis.from_url(target.url, **options)
    return RedisCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in target.nodes], require_full_coverage=True, **options
    )


def connect_async(target: RedisTarget | str, wait_for_connection_s: float | None = None, **options: Any) -> AsyncClient:
    """The asyncio client for `target` (the gateway's). redis-py keeps at most `max_connections`
    (default 100) connections and fails a command past them with MaxConnectionsError; with
    `wait_for_connection_s` such a command waits that long for a free one instead (one Redis,
    not a cluster: its client has no waiting pool)."""
    target = RedisTarget.parse(target) if isinstance(target, str) else target
    if not target.cluster:
        if wait_for_connection_s is None:
            return aioredis.Redis.from_url(target.url, **options)
        options.setdefault("max_connections", DEFAULT_MAX_CONNECTIONS)
        pool = aioredis.BlockingConnectionPool.from_url(target.url, timeout=wait_for_connection_s, **options)
        return aioredis.Redis.from_pool(pool)
    options.pop("health_check_interval", None)  # per node in the cluster client; not taken here
    return AsyncRedisCluster(
        startup_nodes=[AsyncClusterNode(host, port) for host, port in target.nodes],
        require_full_coverage=True,
        **options,
    )


def pubsub_client(target: RedisTarget | str, attempt: int = 0, **options: Any) -> aioredis.Redis:
    """A plain asyncio client for pub/sub on one node. In a Redis Cluster a PUBLISH reaches the
    subscribers on every node (over the cluster bus), so one node is enough; `attempt` picks the
    next node after the previous one failed, round the nodes named in REDIS_URL."""
    target = RedisTarget.parse(target) if isinstance(target, str) else target
    if not target.cluster:
        return aioredis.Redis.from_url(target.url, **options)
    host, port = target.nodes[attempt % len(target.nodes)]
    return aioredis.Redis(host=host, port=port, **options)


def is_cluster(client: Any) -> bool:
    return isinstance(client, (RedisCluster, AsyncRedisCluster))


def nodes(client: SyncClient, primaries_only: bool = True) -> list[redis.Redis]:
    """A plain client of every node (of every primary by default); the client itself for one Redis."""
    if not isinstance(client, RedisCluster):
        return [client]
    found = client.get_primaries() if primaries_only else client.get_nodes()
    return [node.redis_connection or client.get_redis_connection(node) for node in found]


def database(client: SyncClient) -> str:
    """The database number the client works on ("0" on a cluster)."""
    if isinstance(client, RedisCluster):
        return "0"
    return str(client.connection_pool.connection_kwargs.get("db", 0))


def describe(client: SyncClient) -> str:
    """Where the client points, for messages."""
    if isinstance(client, RedisCluster):
        return "Redis Cluster " + ",".join(f"{n.host}:{n.port}" for n in client.get_primaries())
    kwargs = client.connection_pool.connection_kwargs
    return f"Redis {kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
