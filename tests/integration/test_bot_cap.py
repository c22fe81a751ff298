"""The cap on a player's unfinished bot matches (services/gateway/bot_cap.py) on a real Redis: a
burst of concurrent creates admits exactly the cap, a match leaves the count once the projection
shows it over (or never knew it), and a refused create gives its place back."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis

from services.common.projection import Projection
from services.common.redis_keys import Keys
from services.gateway.bot_cap import GRACE_MS, BotMatchCap
from services.gateway.errors import ApiError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
KEYS = Keys("t:", 3)


async def _take(cap: BotMatchCap, player: str, match_id: str):
    try:
        return await cap.take(player, match_id)
    except ApiError as error:
        return error


def test_a_burst_of_creates_admits_exactly_the_cap_and_a_match_leaves_it_once_over(redis_db_url, redis_client):
    async def run():
        client = aioredis.Redis.from_url(redis_db_url)
        cap = BotMatchCap(client, Projection(client, KEYS), 4)
        try:
            burst = await asyncio.gather(*(_take(cap, "ann", f"m-{n}") for n in range(12)))
            again = await _take(cap, "ann", next(p.match_id for p in burst if not isinstance(p, ApiError)))
            other = await _take(cap, "bob", "m-bob")
            admitted = [p.match_id for p in burst if not isinstance(p, ApiError)]
            redis_client.hset(KEYS.match(admitted[0]), mapping={"game": "strands", "status": "over"})
            redis_client.hset(KEYS.match(admitted[1]), mapping={"game": "strands", "status": "active"})
            redis_client.zadd(KEYS.bot_matches("ann"), {admitted[2]: int(time.time() * 1000) - GRACE_MS - 1})
            after_two_ended = [await _take(cap, "ann", f"n-{n}") for n in range(3)]
            refused = await _take(cap, "ann", "refused")
            return burst, again, other, after_two_ended, refused
        finally:
            await client.aclose()

    burst, again, other, after, refused = asyncio.run(run())
    errors = [p for p in burst if isinstance(p, ApiError)]
    assert len(burst) - len(errors) == 4 and len(errors) == 8
    assert all(e.status == 429 and e.code == "bot_match_limit" for e in errors)
    assert "PLYLOG_BOT_MATCHES_PER_PLAYER=4" in errors[0].message and "ann" in errors[0].message
    assert not isinstance(again, ApiError) and not again.added  # already counted: admitted, not twice
    assert not isinstance(other, ApiError)  # bob's count is his own
    assert [isinstance(p, ApiError) for p in after] == [False, False, True]  # one over, one never projected
    assert isinstance(refused, ApiError)


def test_a_refused_create_gives_its_place_back_but_not_one_it_did_not_take(redis_db_url):
    async def run():
        client = aioredis.Redis.from_url(redis_db_url)
        cap = BotMatchCap(client, Projection(client, KEYS), 1)
        try:
            first = await cap.take("ann", "m-1")
            again = await cap.take("ann", "m-1")  # e.g. a create naming a match ann already has
            await cap.submitted(again, _result("rejected"))
            still = await _take(cap, "ann", "m-2")
            await cap.submitted(first, _result("rejected"))
            freed = await _take(cap, "ann", "m-2")
            return still, freed
        finally:
            await client.aclose()

    still, freed = asyncio.run(run())
    assert isinstance(still, ApiError) and not isinstance(freed, ApiError)


async def _result(status: str) -> dict:
    return {"status": status}
