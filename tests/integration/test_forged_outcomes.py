"""Outcome records that no rules worker wrote change nothing (services/projector/projection.py,
Projection.confirm): the projector, on Kafka and Redis, applies an outcome only when it agrees with
the match the projection saw finish. A forged outcome for a match that never existed, and forged
outcomes for a finished match with other players or another winner, leave every rating,
leaderboard, player record and outcome mark as the true records alone make them, and are counted
(`outcomes_refused`). On an open broker anyone can write plylog.outcomes; in cluster mode only the
rules worker's Kafka user can (tests/cluster/test_cluster_auth.py)."""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict

import orjson
import pytest

from bench.logs import random_match_records
from services.common.redis_keys import Keys
from services.projector.projection import Projection
from services.projector.runner import catch_up
from services.projector.store import Store, dump, without_offsets

from .test_projector import fold_offline, projector, send, wait_until_projected

pytestmark = pytest.mark.integration
PARTITIONS = 4


def by_match(records: list) -> dict[str, list]:
    grouped = defaultdict(list)
    for record in records:
        grouped[record[1]].append(record)
    return grouped


def forged(record: bytes, **changes) -> tuple[int, str, bytes]:
    data = {**orjson.loads(record), **changes}
    return 0, data["match_id"], orjson.dumps(data)


def refused_count(service) -> int:
    metrics = service.dir / "data" / service.name / "metrics.json"
    return json.loads(metrics.read_text()).get("outcomes_refused", 0) if metrics.exists() else 0


def test_forged_outcomes_change_no_rating_leaderboard_or_player_and_are_counted(
    kafka_bootstrap, contract_topics, redis_db_url, redis_client, tmp_path
):
    traffic = [
        (orjson.loads(raw)["match_id"].encode(), raw)
        for raw in random_match_records("strands", 2, seed=11, open_at_once=1, prefix=f"f{uuid.uuid4().hex[:6]}-")
    ]
    results, outcomes, _ = fold_offline(traffic, PARTITIONS)
    first, second = (orjson.loads(value) for _, _, value in outcomes)
    assert first["rated"] and second["rated"], "two rated matches between distinct players"
    results_of = by_match(results)
    topics = contract_topics(partitions=PARTITIONS)
    genuine_topics = contract_topics(partitions=PARTITIONS, prefix=f"{topics.prefix[:-1]}-true.")
    keys = Keys(f"forge{uuid.uuid4().hex[:6]}:", PARTITIONS)
    reference, rebuilt = Keys("forge-true:", PARTITIONS), Keys("forge-rebuilt:", PARTITIONS)

    proj = projector(kafka_bootstrap, topics, tmp_path, redis_db_url, keys.prefix).start()
    proj.wait_ready()
    try:
        # the first match ends, its true outcome follows its results (as the rules worker writes them)
        send(kafka_bootstrap, topics.results, results_of[first["match_id"]])
        send(kafka_bootstrap, topics.outcomes, outcomes[:1])
        winner, loser = first["outcome"]["winner"], 1 - first["outcome"]["winner"]
        send(
            kafka_bootstrap,
            topics.outcomes,
            [
                # a match that never existed, giving a real player a rated loss against a newcomer
                forged(outcomes[0][2], match_id="never-played", players=[first["players"][0], "victim"]),
                # the finished match, its winner turned round
                forged(outcomes[0][2], outcome={**first["outcome"], "winner": loser}),
                # the finished match, with another player in a seat
                forged(outcomes[0][2], players=[first["players"][winner], "victim"]),
            ],
        )
        # then the second match: its outcome comes after the forged ones, so once it is applied
        # the projector has decided every forged record
        send(kafka_bootstrap, topics.results, results_of[second["match_id"]])
        send(kafka_bootstrap, topics.outcomes, outcomes[1:])
        wait_until_projected(redis_client, keys, kafka_bootstrap, topics, workers=[proj])
        deadline = time.monotonic() + 30  # metrics.json is written every 5 s
        while refused_count(proj) < 3 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert refused_count(proj) == 3, proj.tail()
        assert proj.alive and proj.starts == 1, proj.tail()
    finally:
        proj.stop()

    # the same true records without the forged ones, projected elsewhere: the projections are equal
    send(kafka_bootstrap, genuine_topics.results, results)
    send(kafka_bootstrap, genuine_topics.outcomes, outcomes)
    rebuild(redis_client, reference, genuine_topics, kafka_bootstrap)
    # and a rebuild from the forged topics decides as the live projector did
    rebuild(redis_client, rebuilt, topics, kafka_bootstrap)
    live = without_offsets(dump(redis_client, keys))
    assert not redis_client.exists(keys.player("victim"))
    assert live == without_offsets(dump(redis_client, reference))
    assert live == without_offsets(dump(redis_client, rebuilt))
    players = set(first["players"]) | set(second["players"])
    assert redis_client.zcard(keys.leaderboard("strands", "rating")) == len(players)


def rebuild(client, keys: Keys, topics, bootstrap: str) -> None:
    catch_up(Projection(Store(client, keys, "projector", topics.outcomes), topics), bootstrap)
