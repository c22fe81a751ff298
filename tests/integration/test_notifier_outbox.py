"""The notifier's outbox scripts on a real Redis: idempotent adds written with the offsets, the
queue bound, reminders superseded by a later seq, claims, leases, retries and dead letters."""

from __future__ import annotations

import orjson
import pytest
import redis.asyncio as aioredis

from services.common.notify_store import Registry
from services.notifier.outbox import Delivery, Outbox

pytestmark = pytest.mark.integration
PREFIX = "t:"
NOW = 1_765_000_000_000


def delivery(n: int, *, endpoint: str = "we-1", kind: str = "your_move", seq: int = 1, due: int = 0) -> Delivery:
    payload = orjson.dumps({"id": f"n-{n}", "kind": kind})
    return Delivery(f"d-{n}", "ann", endpoint, "webhook", kind, f"n-{n}", "m-1", seq, due, payload)


@pytest.fixture
async def outbox(redis_db_url):
    client = aioredis.Redis.from_url(redis_db_url)
    yield Outbox(client, PREFIX, max_pending=3, retention_s=3600)
    await client.aclose()


async def test_a_batch_read_again_adds_nothing_and_its_offsets_move_with_it(outbox):
    batch = [delivery(1), delivery(2)]
    assert await outbox.enqueue(batch, {("plylog.results", 4): 17}, {"m-1": 2}, NOW) == (2, 0)
    assert await outbox.enqueue(batch, {("plylog.results", 4): 17}, {"m-1": 2}, NOW) == (0, 0)
    assert await outbox.offsets() == {("plylog.results", 4): 17}
    assert await outbox.ready_endpoints(NOW, 10) == ["we-1"]
    assert sorted(await outbox.due("we-1", NOW, 10)) == ["d-1", "d-2"]


async def test_past_the_queue_bound_a_delivery_is_a_dead_letter_at_once_and_keeps_no_entry(outbox):
    added, full = await outbox.enqueue([delivery(n) for n in range(5)], {}, {}, NOW)
    assert (added, full) == (3, 2)
    letters = await Registry(outbox.client, PREFIX).dead_letters("ann")
    assert [d["reason"].split(":")[0] for d in letters] == ["queue_full", "queue_full"]
    assert await outbox.state("d-4") == {}
    assert (await outbox.enqueue([delivery(9, endpoint="we-2")], {}, {}, NOW)) == (1, 0)  # another endpoint's room


async def test_a_later_seq_drops_the_waiting_reminder(outbox):
    await outbox.enqueue([delivery(1, kind="clock_low", seq=4, due=NOW + 10**6)], {}, {"m-1": 4}, NOW)
    assert (await outbox.state("d-1"))["state"] == "pending"
    await outbox.enqueue([delivery(2, kind="clock_low", seq=6, due=NOW + 10**6)], {}, {"m-1": 6}, NOW)
    assert (await outbox.state("d-1"))["state"] == "dropped"  # one reminder waits per match and endpoint
    await outbox.enqueue([], {}, {"m-1": 7}, NOW)
    assert (await outbox.state("d-2"))["state"] == "dropped"  # the match moved on
    assert await outbox.ready_endpoints(NOW + 2 * 10**6, 10) == []


async def test_a_claim_holds_a_delivery_for_its_lease_and_a_restart_releases_it(outbox):
    await outbox.enqueue([delivery(1)], {}, {}, NOW)
    claimed = await outbox.claim("d-1", NOW, 60_000)
    assert claimed is not None and claimed["attempts"] == "1"
    assert await outbox.claim("d-1", NOW, 60_000) is None  # held
    assert await outbox.due("we-1", NOW + 1, 10) == []
    assert await outbox.release(NOW + 1) == 1  # the next run: due again at once
    assert await outbox.due("we-1", NOW + 1, 10) == ["d-1"]


async def test_a_retry_waits_its_backoff_and_the_last_failure_is_a_dead_letter_with_the_reason(outbox):
    await outbox.enqueue([delivery(1)], {}, {}, NOW)
    await outbox.claim("d-1", NOW, 60_000)
    await outbox.finish("d-1", "retry", NOW, "HTTP 503", NOW + 5_000)
    assert await outbox.due("we-1", NOW + 4_999, 10) == [] and await outbox.due("we-1", NOW + 5_000, 10) == ["d-1"]
    await outbox.claim("d-1", NOW + 5_000, 60_000)
    await outbox.finish("d-1", "dead", NOW + 5_001, "HTTP 503 (after 2 attempts)")
    state = await outbox.state("d-1")
    assert state["state"] == "dead" and "payload" not in state
    (letter,) = await Registry(outbox.client, PREFIX).dead_letters("ann")
    assert letter["reason"] == "HTTP 503 (after 2 attempts)" and letter["attempts"] == 2
    assert await outbox.ready_endpoints(NOW + 10**9, 10) == []
    await outbox.finish("d-1", "sent", NOW + 6_000)  # an end is final
    assert (await outbox.state("d-1"))["state"] == "dead"


async def test_a_players_endpoint_keeps_no_address_in_redis_and_forgetting_them_empties_their_queue(outbox):
    registry = Registry(outbox.client, PREFIX)
    mine = await registry.add("ann", "email", None, "2026-12-07T00:00:00.000Z")  # the address: in the profile
    assert set(mine) == {"id", "channel", "created_at"}
    hers = await registry.add("bea", "webhook", None, "2026-12-07T00:00:00.000Z")
    await registry.set_preferences("ann", ["your_move"], ["email"])
    queued = [delivery(n, endpoint=mine["id"]) for n in (1, 2)] + [delivery(3, endpoint=hers["id"])]
    await outbox.enqueue(queued, {}, {}, NOW)
    await outbox.claim("d-1", NOW, 60_000)  # one on its way: its entry goes too
    assert await registry.forget("ann") is True
    assert await outbox.state("d-1") == {} and await outbox.state("d-2") == {}
    assert await outbox.claim("d-2", NOW, 60_000) is None and await outbox.due(mine["id"], NOW + 10**6, 10) == []
    assert await outbox.ready_endpoints(NOW + 10**6, 10) == [hers["id"]]  # another player's queue stays
    assert await registry.endpoints("ann") == [] and await registry.dead_letters("ann") == []
    await outbox.finish("d-1", "dead", NOW + 1, "HTTP 503")  # the send that was on its way ends: nothing kept
    assert await outbox.state("d-1") == {} and await registry.dead_letters("ann") == []
    assert await registry.forget("ann") is False  # nothing left
