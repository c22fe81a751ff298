"""Faults on a real local cluster (3 Kafka nodes, Redis Cluster 3 + 3; tests/cluster/conftest.py)
under a load of every game: a broker SIGKILLed and restarted, the Redis primary with the most
match keys SIGKILLed (its replica takes over), rules workers scaled 1 -> 3 -> 1 and projectors
1 -> 2, a rules worker paused past its session. Each ends with every move answered, `plylog audit`
clean, the accepted results equal to the offline fold, and (where a projector ran) the projection
equal to a rebuild. The times they measure are printed at the end of the run."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter

import pytest
from kafka import KafkaProducer

from bench.procs import Service
from games.registry import GAME_MODULES
from services.common import kafka_admin, kafka_auth, redis_client
from services.common.kafka_auth import KafkaAuth
from services.common.kafka_read import read_topic
from services.common.redis_keys import Keys
from services.common.settings import Topics
from services.projector.store import all_stored_offsets, dump
from tests.integration.harness import (
    mixed_bot_traffic,
    rules_worker,
    wait_until_answered,
    wait_until_assigned,
    wait_until_some_answered,
)
from tests.integration.test_rules_worker import _wait_for_split, assert_audit_clean

from .conftest import PARTITIONS, LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.cluster, pytest.mark.timeout(900)]
GAMES = list(GAME_MODULES)
FIGURES: dict[str, float] = {}


def load(prefix: str, seed: int) -> list[tuple[bytes, bytes]]:
    traffic = mixed_bot_traffic(GAMES, matches=200, seed=seed, prefix=prefix)
    assert len(traffic) >= 5000 and len({k for k, _ in traffic}) >= 200
    return traffic


class Sender(threading.Thread):
    """Produces the load over `seconds` with acks=all, and checks every send was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, records: list[tuple[bytes, bytes]], seconds: float):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.records, self.seconds = bootstrap, topic, records, seconds
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            producer = KafkaProducer(
                bootstrap_servers=self.bootstrap,
                acks="all",
                linger_ms=5,
                delivery_timeout_ms=180_000,
                request_timeout_ms=20_000,
                **kafka_auth.kafka_python(KafkaAuth.from_env()),  # the operator's (conftest)
            )
            futures, pace = [], self.seconds / len(self.records)
            started = time.monotonic()
            for n, (key, value) in enumerate(self.records):
                futures.append(producer.send(self.topic, key=key, value=value))
                ahead = started + n * pace - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            producer.flush(timeout=240)
            for future in futures:
                future.get(timeout=60)
            producer.close()
        except BaseException as error:  # noqa: BLE001 - reported by finish()
            self.error = error

    def finish(self) -> None:
        self.join(300)
        assert not self.is_alive(), "the load did not finish"
        assert self.error is None, f"a move record was not acknowledged by Kafka: {self.error!r}"


def workers(cluster: LocalCluster, topics: Topics, home, count: int, first: int = 1) -> list[Service]:
    env = cluster.service_env(topics, "unused:", "rules")
    return [rules_worker(cluster.bootstrap, topics, home, f"rules-{n}", **env) for n in range(first, first + count)]


def projector(cluster: LocalCluster, topics: Topics, home, prefix: str, name: str = "projector-1") -> Service:
    return Service(name, "services.projector", ("--name", name), cluster.service_env(topics, prefix, "projector"), home)


def start_all(*services: Service) -> None:
    for service in services:
        service.start()
    for service in services:
        service.wait_ready(timeout=180)


def split_under_load(cluster: LocalCluster, topics: Topics, pair: list[Service], traffic) -> Sender:
    """Start two rules workers, wait until they share the partitions, then send the load over 35 s."""
    start_all(*pair)
    _wait_for_split(*pair)
    sender = Sender(cluster.bootstrap, topics.moves, traffic, seconds=35)
    sender.start()
    return sender


def wait_until_projected(
    cluster: LocalCluster, topics: Topics, keys: Keys, timeout: float = 300.0, services=()
) -> None:
    from tests.integration.test_projector import end_offsets

    client = cluster.redis()
    deadline = time.monotonic() + timeout
    while True:
        ends = end_offsets(cluster.bootstrap, topics)
        stored = all_stored_offsets(client, keys, "projector")
        if stored == ends:
            return
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {s.name}:\n{s.tail()}" for s in services)
            raise AssertionError(f"projection not caught up: stored {stored}, ends {ends}\n{tails}")
        time.sleep(0.5)


def rebuild_check(cluster: LocalCluster, topics: Topics, prefix: str) -> str:
    env = {**cluster.env, **cluster.service_env(topics, prefix)}
    import subprocess
    import sys

    from .conftest import REPO

    done = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "rebuild", "--check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "equals a rebuild" in done.stdout, done.stdout + done.stderr
    return done.stdout


def leaders(cluster: LocalCluster, topic: str) -> Counter:
    """How many partitions of `topic` each broker (node id) leads."""
    with kafka_admin.admin(cluster.bootstrap) as client:
        described = client.describe_topics([topic])
    return Counter(p["leader_id"] for p in described[0]["partitions"])


def writable_after(cluster: LocalCluster, probe: str, since: float) -> float:
    """Seconds from `since` until a record is acknowledged (acks=all) on every partition of `probe`."""
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap,
        acks="all",
        request_timeout_ms=3000,
        max_block_ms=3000,
        delivery_timeout_ms=10_000,
        retries=0,
        **kafka_auth.kafka_python(KafkaAuth.from_env()),
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                for future in [producer.send(probe, b"probe", partition=p) for p in range(PARTITIONS)]:
                    future.get(timeout=5)
                return time.monotonic() - since
            except Exception:  # noqa: BLE001 - not yet: a partition has no leader or too few replicas
                time.sleep(0.2)
        raise AssertionError(f"{probe} not writable 120 s after the kill")
    finally:
        producer.close(timeout=5)


# --- a broker killed ---------------------------------------------------------------------------------
def test_a_broker_killed_under_load_loses_no_move_and_applies_none_twice(local_cluster, tmp_path):
    cluster = local_cluster
    topics = cluster.topics("b")
    probe = topics.prefix + "probe"
    kafka_admin.create_topics(
        cluster.bootstrap, [kafka_admin.TopicSpec(probe, PARTITIONS, {"min.insync.replicas": "2"}, 3)]
    )
    traffic = load("bk-", seed=31)
    pair = workers(cluster, topics, tmp_path, 2)
    try:
        sender = split_under_load(cluster, topics, pair, traffic)
        time.sleep(8)
        node_id, _ = leaders(cluster, topics.moves).most_common(1)[0]
        killed_at = time.monotonic()
        cluster.kill(f"kafka-{node_id}")
        FIGURES["broker kill: every partition writable again after (s)"] = writable_after(cluster, probe, killed_at)
        time.sleep(max(0.0, 15 - (time.monotonic() - killed_at)))
        restarted = time.monotonic()
        cluster.start_missing()
        FIGURES["broker kill: restarted broker in sync and leading again after (s)"] = time.monotonic() - restarted
        sender.finish()
        wait_until_answered(cluster.bootstrap, topics, len(traffic), timeout=300, workers=pair)
        FIGURES["broker kill: every move answered, from the kill (s)"] = time.monotonic() - killed_at
        for worker in pair:
            assert worker.alive and worker.starts == 1, worker.tail()
    finally:
        for worker in pair:
            worker.stop()
    assert_audit_clean(cluster.bootstrap, topics, traffic, tmp_path)


# --- a Redis primary killed ------------------------------------------------------------------------------
def primary_with_most_match_keys(cluster: LocalCluster, keys: Keys) -> tuple[str, int]:
    """(redis-N, its port) of the primary that holds the most `match:` keys of the projection."""
    counted = {}
    for node in redis_client.nodes(cluster.redis()):
        port = node.connection_pool.connection_kwargs["port"]
        counted[port] = sum(1 for _ in node.scan_iter(match=f"{keys.prefix}match:*", count=1000))
    port = max(counted, key=counted.get)
    name = next(f"redis-{n}" for n in range(1, 7) if cluster.record(f"redis-{n}").address.endswith(f":{port}"))
    return name, port


def promoted_after(cluster: LocalCluster, dead_port: int, since: float) -> float:
    """Seconds from `since` until a surviving node sees the dead primary failed and the cluster ok
    (its replica promoted: every slot served again)."""
    import redis

    ports = [int(cluster.record(f"redis-{n}").address.rsplit(":", 1)[1]) for n in range(1, 7)]
    node = redis.Redis(host="127.0.0.1", port=next(p for p in ports if p != dead_port), decode_responses=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        seen = {
            line.split()[1].split("@")[0]: line.split()[2]
            for line in node.execute_command(
                "CLUSTER",
                "NODES",
            ).splitlines()
        }
        if (
            "fail" in seen.get(f"127.0.0.1:{dead_port}", "").split(",")
            and node.cluster("INFO")["cluster_state"] == "ok"
        ):
            return time.monotonic() - since
        time.sleep(0.1)
    raise AssertionError("the Redis Cluster did not fail the dead primary over within 60 s")


def partitions_on(cluster: LocalCluster, keys: Keys, port: int) -> list[int]:
    """The results partitions whose keys (and stored offsets) the node on `port` serves."""
    client = cluster.redis()
    return [
        p
        for p in keys.all_partitions()
        if client.nodes_manager.get_node_from_slot(client.keyslot(keys.offsets("projector", p))).port == port
    ]


def resumed_after(
    cluster: LocalCluster, topics: Topics, keys: Keys, partitions: list[int], before: dict[str, int], since: float
) -> float:
    """Seconds from `since` until the projector stored newer offsets for every one of `partitions`."""
    fields = [f"{topics.results}:{p}" for p in partitions]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            stored = all_stored_offsets(cluster.redis(), keys, "projector")
        except Exception:  # noqa: BLE001 - the cluster is failing over
            stored = {}
        if all(stored.get(f, -1) > before.get(f, -1) for f in fields):
            return time.monotonic() - since
        time.sleep(0.2)
    raise AssertionError(f"the projector stored nothing new for {fields} within 120 s")


def test_the_redis_primary_holding_most_match_keys_killed_under_load(local_cluster, tmp_path):
    cluster = local_cluster
    topics = cluster.topics("r")
    keys = Keys(f"rk{int(time.time())}:", PARTITIONS)
    traffic = load("rk-", seed=32)
    worker, proj = workers(cluster, topics, tmp_path, 1)[0], projector(cluster, topics, tmp_path, keys.prefix)
    try:
        start_all(worker, proj)
        sender = Sender(cluster.bootstrap, topics.moves, traffic, seconds=30)
        sender.start()
        time.sleep(12)
        name, port = primary_with_most_match_keys(cluster, keys)
        moved = partitions_on(cluster, keys, port)
        assert moved, f"{name} serves no partition of the projection"
        before = all_stored_offsets(cluster.redis(), keys, "projector")
        killed_at = time.monotonic()
        cluster.kill(name)
        FIGURES["Redis primary kill: replica promoted after (s)"] = promoted_after(cluster, port, killed_at)
        FIGURES["Redis primary kill: projector writing its partitions again after (s)"] = resumed_after(
            cluster, topics, keys, moved, before, killed_at
        )
        sender.finish()
        wait_until_answered(cluster.bootstrap, topics, len(traffic), timeout=300, workers=[worker])
        wait_until_projected(cluster, topics, keys, services=[proj])
        FIGURES["Redis primary kill: projection caught up, from the kill (s)"] = time.monotonic() - killed_at
        # Behaviour, not log lines (the cluster client's own retry may absorb the failover, and then
        # the projector logs nothing): it never restarted, its stored offsets reached the end of every
        # partition (wait_until_projected: nothing left behind), and the projection equals a rebuild
        # from the topics (rebuild_check: nothing lost, nothing applied twice).
        assert proj.alive and proj.starts == 1, proj.tail()
        client = cluster.redis()
        assert client.zcard(keys.leaderboard("strands", "rating")) > 0  # ratings are part of the check below
        rebuild_check(cluster, topics, keys.prefix)
    finally:
        proj.stop()
        worker.stop()
        cluster.start_missing()  # the killed node rejoins, now as a replica (also when the test failed)
    assert_audit_clean(cluster.bootstrap, topics, traffic, tmp_path)


# --- scaling out and in ----------------------------------------------------------------------------------
def test_rules_workers_1_to_3_and_back_and_projectors_1_to_2_under_load(local_cluster, tmp_path):
    cluster = local_cluster
    topics = cluster.topics("s")
    keys = Keys(f"sc{int(time.time())}:", PARTITIONS)
    traffic = load("sc-", seed=33)
    first, second, third = workers(cluster, topics, tmp_path, 3)
    projectors = [projector(cluster, topics, tmp_path, keys.prefix, f"projector-{n}") for n in (1, 2)]
    try:
        start_all(first, projectors[0])
        sender = Sender(cluster.bootstrap, topics.moves, traffic, seconds=45)
        sender.start()
        time.sleep(5)
        start_all(second, third)  # 1 -> 3 rules workers
        time.sleep(6)
        start_all(projectors[1])  # 1 -> 2 projectors
        time.sleep(6)
        # 3 -> 1, two seconds apart: static members leave no group, so each stop is a session
        # timeout later, and the first worker takes partitions over in two rebalances close
        # together, the second arriving while it recovers from the first (the recovery pass of
        # the first once ran on into the second and rolled states back: faust_fixes item 4).
        third.stop()
        time.sleep(2.0)
        second.stop()
        for worker in (third, second):
            assert worker.popen.returncode == 0, worker.tail()
        sender.finish()
        wait_until_answered(cluster.bootstrap, topics, len(traffic), timeout=300, workers=[first])
        wait_until_projected(cluster, topics, keys, services=projectors)
        for service in (first, *projectors):
            assert service.alive and service.starts == 1, service.tail()
        rebuild_check(cluster, topics, keys.prefix)
        refused = rebuild(cluster, topics, keys.prefix)
        assert refused.returncode != 0 and "a projector is connected" in refused.stderr, refused.stderr
    finally:
        for service in (*projectors, third, second, first):
            service.stop()
    assert_audit_clean(cluster.bootstrap, topics, traffic, tmp_path)
    before = dump(cluster.redis(), keys)
    rebuilt = rebuild(cluster, topics, keys.prefix)  # the wipe goes node by node on a cluster
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert dump(cluster.redis(), keys) == before and len(before) > 400  # 200 matches: a hash and a log each


def rebuild(cluster: LocalCluster, topics: Topics, prefix: str):
    import subprocess
    import sys

    from .conftest import REPO

    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", "rebuild"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**cluster.env, **cluster.service_env(topics, prefix)},
    )


# --- a rules worker paused past its session ------------------------------------------------------------
def test_a_rules_worker_paused_past_its_session_while_the_others_take_over(local_cluster, tmp_path):
    cluster = local_cluster
    topics = cluster.topics("p")
    traffic = load("ps-", seed=34)
    pair = workers(cluster, topics, tmp_path, 2)
    try:
        sender = split_under_load(cluster, topics, pair, traffic)
        wait_until_some_answered(cluster.bootstrap, topics)
        pair[0].pause()
        paused_at = time.monotonic()
        # the other worker takes every partition once the paused one's session is over
        wait_until_assigned(pair[1], timeout=120, wanted=list(range(PARTITIONS)))
        FIGURES["paused worker: the other owns every partition after (s)"] = time.monotonic() - paused_at
        pair[0].resume()
        sender.finish()
        wait_until_answered(cluster.bootstrap, topics, len(traffic), timeout=300, workers=pair)
        for worker in pair:
            assert worker.alive, worker.tail()
    finally:
        pair[0].resume()
        for worker in pair:
            worker.stop()
    assert_audit_clean(cluster.bootstrap, topics, traffic, tmp_path)
    assert len(read_topic(cluster.bootstrap, topics.moves)) == len(traffic)


# --- the gateway's live hub on a Redis Cluster -------------------------------------------------------
def test_gateways_subscribed_on_one_node_hear_results_published_on_every_node(local_cluster, tmp_path):
    """The projector PUBLISHes in the script of each partition, on the primary of that partition's
    slot; each gateway's hub is subscribed on one node only. Creates (which wait for their result on
    the hub) of matches homed on every primary all answer 201 through either gateway, and a
    stream opened on one gateway sees the moves made through the other."""
    from tests.e2e.gateway_stack import StreamReader, auth, gateway_process, operator, running_stack

    cluster = local_cluster
    client = cluster.redis()
    with running_stack(cluster.bootstrap, cluster.redis_url, tmp_path, "live", PARTITIONS) as stack:
        keys = stack.keys
        other, other_url = gateway_process(cluster.bootstrap, stack.topics, cluster.redis_url, keys.prefix, tmp_path)
        other.name = "gateway-2"
        other.start().wait_ready(timeout=60)
        try:
            by_node: dict[int, list[str]] = {}
            for n in range(200):
                match_id = f"hub-{n}"
                node = client.nodes_manager.get_node_from_slot(client.keyslot(keys.match(match_id))).port
                if len(by_node.setdefault(node, [])) < 2:
                    by_node[node].append(match_id)
            assert len(by_node) == 3  # matches homed on each primary
            subscribed = {
                node.connection_pool.connection_kwargs["port"]: [
                    c for c in node.client_list() if c.get("cmd") == "psubscribe"
                ]
                for node in redis_client.nodes(client, primaries_only=False)
            }
            assert sum(len(c) for c in subscribed.values()) == 2, subscribed  # one hub per gateway, one node each
            urls = [stack.url, other_url]
            for n, match_id in enumerate(m for ids in by_node.values() for m in ids):
                created = httpx_post(
                    urls[n % 2] + "/v1/matches",
                    {
                        "game": "strands",
                        "seats": ["ann", "ben"],
                        "options": {"layout": "small-4"},
                        "match_id": match_id,
                    },
                )
                assert created.status_code == 201, created.text  # 202 = the hub never heard the result
            match_id = next(iter(by_node.values()))[0]
            reader = StreamReader(other_url, match_id, last_event_id=1).start()
            token = httpx_get(f"{stack.url}/v1/matches/{match_id}/tokens", operator()).json()["tokens"][0]
            moved = httpx_post(
                f"{stack.url}/v1/matches/{match_id}/actions?wait=true", {"action": {"type": "resign"}}, auth(token)
            )
            assert moved.status_code == 200 and moved.json()["status"] == "accepted", moved.text
            reader.wait_for(lambda r: r.accepted_seqs() == [2])
            reader.close()
        finally:
            other.stop()


def httpx_post(url: str, body: dict, headers: dict | None = None):
    import httpx

    from tests.e2e.gateway_stack import operator

    return httpx.post(url, json=body, headers=headers or operator(), timeout=30)


def httpx_get(url: str, headers: dict):
    import httpx

    return httpx.get(url, headers=headers, timeout=30)


# --- plylog up --cluster, twice, and down ------------------------------------------------------------
def test_up_cluster_starts_two_of_each_service_a_second_up_nothing_and_down_stops_them(local_cluster):
    """On the session's cluster: `plylog up --cluster` adds 2 rules workers, 2 projectors, 2
    gateways and one each of the bot service, the matchmaker, the notifier and the tournament
    service (all ready, the gateways sharing one secret); again, it starts nothing; `status` lists
    every node and service; `down -c` of the services leaves none of their processes."""
    import json

    import httpx

    cluster = local_cluster
    first = cluster.plylog("up", "--cluster", "--partitions", str(PARTITIONS))
    try:
        assert first.returncode == 0, first.stdout + first.stderr
        started = re.search(r"^started: (.*)$", first.stdout, re.M).group(1).split(", ")
        assert sorted(started) == [
            *("bots", "gateway-1", "gateway-2", "matchmaker", "notifier"),
            *("projector-1", "projector-2", "rules-1", "rules-2", "tournaments"),
        ]
        again = cluster.plylog("up", "--cluster", "--partitions", str(PARTITIONS))
        assert again.returncode == 0 and "nothing new started" in again.stdout, again.stdout + again.stderr
        rows = json.loads(cluster.plylog("status", "--json").stdout)["components"]
        running = sorted(r["component"] for r in rows if r["state"] == "running")
        assert running == sorted([f"kafka-{n}" for n in (1, 2, 3)] + [f"redis-{n}" for n in range(1, 7)] + started)
        roles = [r["address"].rsplit(" ", 1)[1] for r in rows if r["component"].startswith("redis-")]
        assert sorted(roles) == ["(primary)"] * 3 + ["(replica)"] * 3
        gateways = [r["address"] for r in rows if r["component"].startswith("gateway-")]
        for address in gateways:
            assert httpx.get(f"http://{address}/readyz", timeout=10).status_code == 200
        for row in rows:
            if row["component"].startswith(("rules-", "projector-")):
                assert httpx.get(f"http://{row['address'].split()[0]}/readyz", timeout=10).status_code == 200, row
        secret = (cluster.home / "gateway.secret").read_text()
        assert secret.strip() and len(list(cluster.home.glob("gateway.secret*"))) == 1
        records = [cluster.record(name) for name in started]
        assert all(rec.alive() for rec in records)
    finally:
        services = ("rules", "projector", "gateway", "bots", "matchmaker", "notifier", "tournaments")
        down = cluster.plylog("down", *(arg for name in services for arg in ("-c", name)))
    assert down.returncode == 0, down.stdout + down.stderr
    for rec in records:
        assert not cluster.home.joinpath("run", f"{rec.name}.json").exists()
        assert not rec.alive(), f"{rec.name} (pid {rec.pid}) still runs after plylog down"
