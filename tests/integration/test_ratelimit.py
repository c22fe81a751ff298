"""The gateway's token buckets on a real Redis: the takes of one event-loop turn go in one call."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from services.gateway.ratelimit import RateLimiter

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _evalsha_calls(redis_client) -> int:
    return int(redis_client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def test_the_takes_of_one_turn_share_one_call_and_each_gets_its_own_verdict(redis_db_url, redis_client):
    """Given buckets of 3, when a turn brings five actions of ann and two of bob, then one script
    call answers all seven in order: ann's first three pass and the other two wait, bob's pass;
    a taker that gave up meanwhile does not keep the others from their verdicts."""

    async def run():
        client = aioredis.Redis.from_url(redis_db_url)
        limiter = RateLimiter(client, lambda who: f"t:ratelimit:{who}", rate_per_s=1, burst=3)
        try:
            await limiter.take("warm-up")  # loads the script
            calls = _evalsha_calls(redis_client)
            takes = [asyncio.ensure_future(limiter.take(who)) for who in ["ann"] * 5 + ["bob"] * 2]
            given_up = asyncio.ensure_future(limiter.take("cid"))
            await asyncio.sleep(0)
            given_up.cancel()
            verdicts = await asyncio.gather(*takes)
            return verdicts, _evalsha_calls(redis_client) - calls, await limiter.take("cid")
        finally:
            await client.aclose()

    verdicts, calls, after = asyncio.run(run())
    assert [v.allowed for v in verdicts] == [True, True, True, False, False, True, True]
    assert all(v.retry_after_ms > 0 for v in verdicts[3:5]) and verdicts[4].retry_after_s >= 1
    assert calls == 1
    assert after.allowed  # cid's bucket: the given-up take's token was taken, two remain


def test_a_redis_error_reaches_every_taker_of_the_call(redis_db_url):
    async def run():
        client = aioredis.Redis.from_url(redis_db_url.rsplit(":", 1)[0] + ":1/0", socket_connect_timeout=1)
        limiter = RateLimiter(client, lambda who: f"t:ratelimit:{who}", rate_per_s=1, burst=3)
        try:
            return await asyncio.gather(limiter.take("ann"), limiter.take("bob"), return_exceptions=True)
        finally:
            await client.aclose()

    outcomes = asyncio.run(run())
    assert len(outcomes) == 2 and all(isinstance(o, aioredis.ConnectionError) for o in outcomes), outcomes


def test_a_turn_with_more_takes_than_one_call_holds_is_answered_in_several(redis_db_url, redis_client):
    """Given 600 actions in one turn (more than KEYS_PER_CALL), then each gets its verdict, from
    three calls one after the other (in order), so no one script holds Redis for all of them."""
    from services.gateway.ratelimit import KEYS_PER_CALL

    async def run():
        client = aioredis.Redis.from_url(redis_db_url)
        limiter = RateLimiter(client, lambda who: f"t:ratelimit:{who}", rate_per_s=1, burst=1)
        try:
            await limiter.take("warm-up")
            calls = _evalsha_calls(redis_client)
            verdicts = await asyncio.gather(*(limiter.take(f"p{n % 300}") for n in range(600)))
            return verdicts, _evalsha_calls(redis_client) - calls
        finally:
            await client.aclose()

    verdicts, calls = asyncio.run(run())
    assert KEYS_PER_CALL == 256 and calls == 3
    assert [v.allowed for v in verdicts] == [True] * 300 + [False] * 300  # each player's second has to wait
