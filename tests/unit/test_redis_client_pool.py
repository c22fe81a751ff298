"""The gateway's Redis client waits for a free connection past redis-py's 100 instead of failing
(a few hundred seat sockets acting at once need more at a time); other clients are unchanged."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from services.common import redis_client


def test_a_client_that_waits_for_a_connection_has_a_blocking_pool_of_the_same_size():
    client = redis_client.connect_async("redis://127.0.0.1:1/3", wait_for_connection_s=5, socket_connect_timeout=2)
    pool = client.connection_pool
    assert isinstance(pool, aioredis.BlockingConnectionPool)
    assert (pool.max_connections, pool.timeout) == (redis_client.DEFAULT_MAX_CONNECTIONS, 5)
    assert pool.connection_kwargs["db"] == 3 and pool.connection_kwargs["socket_connect_timeout"] == 2
    asyncio.run(client.aclose())  # closes its pool too (from_pool)


def test_other_clients_keep_the_plain_pool_and_a_cluster_is_left_alone():
    plain = redis_client.connect_async("redis://127.0.0.1:1/0")
    assert type(plain.connection_pool) is aioredis.ConnectionPool
    cluster = redis_client.connect_async("redis+cluster://127.0.0.1:1,127.0.0.1:2", wait_for_connection_s=5)
    assert isinstance(cluster, AsyncRedisCluster)
