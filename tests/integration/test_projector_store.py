"""The projector's Redis side on a real Redis: a batch is applied only while the stored offsets
are what its worker expects (a zombie writes nothing), the wipe takes only the projection."""

from __future__ import annotations

import random
from collections import namedtuple

import orjson
import pytest
from kafka import TopicPartition

from bench.logs import random_match_records
from games.fold import Replayer
from games.registry import GAME_MODULES
from services.common.redis_keys import Keys
from services.common.settings import Topics
from services.projector.plan import match_fields
from services.projector.projection import Projection
from services.projector.store import Store, dump
from tests.support import record

pytestmark = pytest.mark.integration
Message = namedtuple("Message", "offset value")
TOPICS = Topics("z.")
RESULTS0 = TopicPartition(TOPICS.results, 0)
SIDE2 = {"layout": {"side": 2, "rows": ["22", "212", "22"]}}


def results_of_a_match() -> list[bytes]:
    create = {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": SIDE2}
    moves = [
        record("m1", "alice", create, 0),
        record("m1", "alice", {"type": "place", "cells": [[1, 0]]}, 1),
        record("m1", "bob", {"type": "place", "cells": [[0, -1], [-1, 1]]}, 2),
    ]
    replayer = Replayer()
    return [orjson.dumps(replayer.feed(raw).result) for raw in moves]


def test_a_worker_whose_partition_moved_on_writes_nothing_and_resumes_from_the_stored_offset(redis_client):
    keys = Keys("fence:")
    results = results_of_a_match()
    zombie, successor = (Projection(Store(redis_client, keys, "projector", TOPICS.outcomes), TOPICS) for _ in range(2))
    assert zombie.own([RESULTS0]) == {RESULTS0: None} and successor.own([RESULTS0]) == {RESULTS0: None}
    assert successor.apply({RESULTS0: [Message(0, results[0]), Message(1, results[1])]}) is None
    before = dump(redis_client, keys)
    conflict = zombie.apply({RESULTS0: [Message(0, results[0]), Message(1, results[1]), Message(2, results[2])]})
    assert conflict is not None and conflict.field == f"{TOPICS.results}:0" and conflict.stored == 2
    assert dump(redis_client, keys) == before  # nothing of the zombie's batch landed
    assert zombie.own([RESULTS0]) == {RESULTS0: 2}  # it would seek there
    assert zombie.apply({RESULTS0: [Message(1, results[1]), Message(2, results[2])]}) is None  # 1 is skipped
    assert redis_client.hget(keys.match("m1", 0), "seq") == b"3"
    assert redis_client.zcard(keys.match_log("m1", 0)) == 3
    assert redis_client.hget(keys.offsets("projector", 0), f"{TOPICS.results}:0") == b"3"
    assert successor.apply({RESULTS0: [Message(2, results[2])]}) is not None  # now the successor is fenced


def test_after_a_wipe_the_worker_forgets_the_seqs_it_wrote_and_projects_the_match_again(redis_client):
    """Given a projection that wrote seqs 1-2 of a match (and keeps them, to skip reading them),
    when the projection is wiped under it, its next batch is fenced, and once it owns the
    partition again it re-applies the match from the start: nothing is taken as stale."""
    keys = Keys("forget:")
    results = results_of_a_match()
    projection = Projection(Store(redis_client, keys, "projector", TOPICS.outcomes), TOPICS)
    projection.own([RESULTS0])
    assert projection.apply({RESULTS0: [Message(0, results[0]), Message(1, results[1])]}) is None
    assert projection.seqs.split(frozenset({(0, "m1")})) == ({"m1": 2}, frozenset())
    projection.store.wipe()
    assert projection.apply({RESULTS0: [Message(2, results[2])]}) is not None  # fenced: no offset stored
    assert projection.own([RESULTS0]) == {RESULTS0: None} and len(projection.seqs) == 0
    assert projection.apply({RESULTS0: [Message(i, raw) for i, raw in enumerate(results)]}) is None
    assert redis_client.hget(keys.match("m1", 0), "seq") == b"3"
    assert redis_client.zcard(keys.match_log("m1", 0)) == 3
    assert projection.totals.counts["stale"] == 0


def played_results() -> list[bytes]:
    """Results of complete random matches of every game, interleaved, and one left waiting."""
    replayer, results = Replayer(), []
    waiting = record(
        "open-1", "carol", {"type": "create", "game": "strands", "seats": ["carol", None], "options": SIDE2}, 0
    )
    for game in GAME_MODULES:
        for raw in [*random_match_records(game, 3, seed=5, open_at_once=3, prefix=f"{game}-"), waiting]:
            result = replayer.feed(raw).result
            if result["status"] == "accepted" and not result["duplicate"]:
                results.append(orjson.dumps(result))
    return results


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_batching_gives_the_projection_of_one_result_at_a_time(redis_client, seed):
    """A move that follows the stored one without a lifecycle event writes only what it changes
    (seq, view, list score): the hashes still hold every field of the latest result, and a batch
    of many results (coalesced) leaves what applying them one by one leaves."""
    results, keys = played_results(), Keys(f"batching{seed}:")
    one_by_one = Projection(Store(redis_client, keys, "projector", TOPICS.outcomes), TOPICS)
    one_by_one.own([RESULTS0])
    for offset, raw in enumerate(results):
        assert one_by_one.apply({RESULTS0: [Message(offset, raw)]}) is None
    latest = {orjson.loads(raw)["match_id"]: orjson.loads(raw) for raw in results}
    for match_id, result in latest.items():
        stored = {k.decode(): v.decode() for k, v in redis_client.hgetall(keys.match(match_id, 0)).items()}
        assert stored == match_fields(result), match_id
    expected = dump(redis_client, keys)
    one_by_one.store.wipe()
    batched, rng, offset = (
        Projection(Store(redis_client, keys, "projector", TOPICS.outcomes), TOPICS),
        random.Random(seed),
        0,
    )
    batched.own([RESULTS0])
    while offset < len(results):
        size = rng.choice([1, 2, 7, 40, 500])
        batch = [Message(o, results[o]) for o in range(offset, min(offset + size, len(results)))]
        assert batched.apply({RESULTS0: batch}) is None
        offset += len(batch)
    assert dump(redis_client, keys) == expected


@pytest.mark.parametrize("bad", [True, None, 1.5j, 2**64])
def test_a_batch_with_an_argument_redis_cannot_take_writes_nothing(redis_client, bad):
    """The commands travel as one MessagePack argument; the script checks every argument before it
    runs any command, so a batch that fails leaves no half of itself behind (no counter counted
    twice when its halves are applied again); what cannot even be packed fails before sending."""
    import redis

    keys = Keys("halfway:")
    store = Store(redis_client, keys, "projector", TOPICS.outcomes)
    commands = [("HINCRBY", keys.totals("strands", 0), "moves", 1), ("HSET", keys.match("m1", 0), "status", bad)]
    with pytest.raises((redis.ResponseError, redis.DataError)):
        store.apply(commands, {f"{TOPICS.results}:0": (None, 1)})
    assert redis_client.hget(keys.totals("strands", 0), "moves") is None
    assert redis_client.hget(keys.offsets("projector", 0), f"{TOPICS.results}:0") is None
    assert store.apply(commands[:1], {f"{TOPICS.results}:0": (None, 1)}) is None
    assert redis_client.hget(keys.totals("strands", 0), "moves") == b"1"


def test_the_wipe_takes_the_projection_and_nothing_else(redis_client):
    keys = Keys("wipe:")
    projection = Projection(Store(redis_client, keys, "projector", TOPICS.outcomes), TOPICS)
    projection.own([RESULTS0])
    projection.apply({RESULTS0: [Message(i, raw) for i, raw in enumerate(results_of_a_match())]})
    redis_client.set(keys.ratelimit("alice"), "5")
    redis_client.set("wipe-other:match:x", "1")
    redis_client.set("other:thing", "1")
    projected = len(dump(redis_client, keys))
    assert projected > 5
    assert projection.store.wipe() == projected
    assert dump(redis_client, keys) == {}
    assert sorted(redis_client.keys("*")) == [b"other:thing", b"wipe-other:match:x", b"wipe:ratelimit:alice"]


def test_the_dump_is_canonical_and_prefix_free(redis_client):
    redis_client.zadd("a:z", {"m2": 1.5, "m1": 1.5, "m0": 0})
    redis_client.hset("a:h", mapping={"b": "2", "a": "1"})
    redis_client.sadd("a:s", "y", "x")
    redis_client.set("a:ratelimit:p", "1")
    assert dump(redis_client, Keys("a:")) == {
        "h": ["hash", {"a": "1", "b": "2"}],
        "s": ["set", ["x", "y"]],
        "z": ["zset", [["m0", 0.0], ["m1", 1.5], ["m2", 1.5]]],
    }


def test_a_record_redis_refuses_is_skipped_and_the_rest_of_its_batch_applied(redis_client, monkeypatch):
    """Planning checks what records give; if a value Redis refuses got through anyway, the batch
    is applied in halves and only the record that fails is skipped (its offset stored, counted)."""
    from services.projector import plan as plan_module

    keys = Keys("bisect:")
    results = results_of_a_match()
    real = plan_module.match_fields

    def poisoned(result, *settled):
        fields = real(result, *settled)
        return {**fields, "status": True} if result["seq"] == 2 else fields  # redis-py refuses a bool

    monkeypatch.setattr(plan_module, "match_fields", poisoned)
    projection = Projection(Store(redis_client, keys, "projector", TOPICS.outcomes), TOPICS)
    projection.own([RESULTS0])
    assert projection.apply({RESULTS0: [Message(0, results[0]), Message(1, results[1])]}) is None
    assert projection.apply({RESULTS0: [Message(2, results[2])]}) is None
    assert redis_client.hget(keys.offsets("projector", 0), f"{TOPICS.results}:0") == b"3"
    assert redis_client.hget(keys.match("m1", 0), "seq") == b"3"
    assert [orjson.loads(m)["seq"] for m in redis_client.zrange(keys.match_log("m1", 0), 0, -1)] == [1, 3]
    assert projection.totals.counts["skipped"] == 1 and projection.totals.counts["applied"] == 2


def spread(results: list[bytes], keys: Keys) -> dict[TopicPartition, list[Message]]:
    """The results on their matches' home partitions, as the rules worker writes them."""
    polled: dict[TopicPartition, list[Message]] = {}
    for raw in results:
        messages = polled.setdefault(TopicPartition(TOPICS.results, keys.home(orjson.loads(raw)["match_id"])), [])
        messages.append(Message(len(messages), raw))
    return polled


def owning_all(redis_client, keys: Keys) -> Projection:
    projection = Projection(Store(redis_client, keys, "projector", TOPICS.outcomes), TOPICS)
    projection.own([TopicPartition(TOPICS.results, p) for p in keys.all_partitions()])
    return projection


@pytest.mark.parametrize("seed", [1, 2])
def test_polls_of_many_partitions_give_the_projection_of_one_partition_at_a_time(redis_client, seed):
    """Given results spread over their home partitions, when polls hold slices of several
    partitions at once (their scripts sent together), the projection is what applying each
    partition alone, poll by poll, leaves."""
    keys = Keys(f"together{seed}:")
    polled = spread(played_results(), keys)
    assert len(polled) > 3
    alone = owning_all(redis_client, keys)
    for tp, messages in polled.items():
        assert alone.apply({tp: messages}) is None
    expected = dump(redis_client, keys)
    alone.store.wipe()
    together, rng = owning_all(redis_client, keys), random.Random(seed)
    at = dict.fromkeys(polled, 0)
    while any(at[tp] < len(polled[tp]) for tp in polled):
        poll = {}
        for tp in rng.sample(sorted(polled), k=rng.randint(2, len(polled))):
            size = rng.choice([1, 2, 5, 30])
            if at[tp] < len(polled[tp]):
                poll[tp] = polled[tp][at[tp] : at[tp] + size]
                at[tp] += len(poll[tp])
        assert together.apply(poll) is None
    assert dump(redis_client, keys) == expected
    assert together.totals.counts["applied"] == alone.totals.counts["applied"] > 0


def test_a_conflict_in_one_partition_of_a_poll_leaves_the_others_applied(redis_client):
    """Given a poll of several partitions where another writer moved one partition's stored
    offset, that partition writes nothing and the poll answers its conflict; the other partitions
    are applied with their offsets, and owning again resumes each from what is stored."""
    keys = Keys("together-conflict:")
    polled = spread(played_results(), keys)
    moved, *others = sorted(polled)
    projection = owning_all(redis_client, keys)
    redis_client.hset(keys.offsets("projector", moved.partition), f"{moved.topic}:{moved.partition}", 1)
    conflict = projection.apply({tp: polled[tp][:3] for tp in polled})
    assert conflict is not None and conflict.field == f"{moved.topic}:{moved.partition}" and conflict.stored == 1
    stored = projection.own(list(polled))
    assert stored[moved] == 1 and all(stored[tp] == min(3, len(polled[tp])) for tp in others)
    first = orjson.loads(polled[moved][0].value)["match_id"]
    assert redis_client.exists(keys.match(first, moved.partition)) == 0  # nothing of the moved one landed


@pytest.mark.parametrize("scripts_lost", [False, True])
def test_a_partition_whose_script_fails_in_a_poll_is_applied_on_its_own(redis_client, monkeypatch, scripts_lost):
    """Given a poll of several partitions, when Redis has lost the script (a restart) or refuses
    one partition's data, every partition is still applied and only the record that fails is
    skipped."""
    from services.projector import plan as plan_module

    keys = Keys("together-failing:")
    polled = spread(played_results(), keys)
    poisoned_tp = sorted(polled)[1]
    poison = orjson.loads(polled[poisoned_tp][-1].value)  # the last of its match: not coalesced away
    real = plan_module.match_fields

    def poisoned(result, *settled):
        fields = real(result, *settled)
        hit = result["match_id"] == poison["match_id"] and result["seq"] == poison["seq"]
        return {**fields, "status": True} if hit else fields  # redis-py refuses a bool

    monkeypatch.setattr(plan_module, "match_fields", poisoned)
    projection = owning_all(redis_client, keys)
    if scripts_lost:
        redis_client.script_flush()
    assert projection.apply(polled) is None
    for tp, messages in polled.items():
        assert redis_client.hget(keys.offsets("projector", tp.partition), f"{tp.topic}:{tp.partition}") == b"%d" % len(
            messages
        )
    assert projection.totals.counts["skipped"] == 1
    assert projection.totals.counts["applied"] == sum(map(len, polled.values())) - 1
