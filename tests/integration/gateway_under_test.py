"""A gateway process on the real broker and Redis with the projection written by the test itself
(no rules worker, no projector), shared by the HTTP and the seat-socket integration tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import orjson

from bench.procs import Service
from services.common.redis_keys import Keys
from services.common.settings import Topics
from tests.e2e.gateway_stack import gateway_process, unique_redis_prefix

CREATED_AT = "2026-11-29T22:00:00.000Z"


class GatewayUnderTest:
    """Its URL and HTTP client, and matches written into Redis as the projector would."""

    entry_player = "alice"  # who made the moves of the logs `project` and `entry` write

    def __init__(self, url: str, keys: Keys, redis, topics: Topics, bootstrap: str, process: Service):
        self.url, self.keys, self.redis, self.topics, self.bootstrap, self.process = (
            url,
            keys,
            redis,
            topics,
            bootstrap,
            process,
        )
        self.http = httpx.Client(base_url=url, timeout=10)

    def project(self, match_id: str, seats=("alice", "bob"), seq: int = 1, game: str = "strands", **view) -> None:
        """A match's hash and its log up to `seq`; `view` adds fields to the stored view."""
        stored_view = {"match_id": match_id, "game": game, "seats": list(seats), "status": "active", "seq": seq, **view}
        self.redis.hset(
            self.keys.match(match_id),
            mapping={
                "game": game,
                "seq": seq,
                "status": "active",
                "seats": orjson.dumps(list(seats)),
                "view": orjson.dumps(stored_view),
                "created_at": CREATED_AT,
            },
        )
        for n in range(1, seq + 1):
            self.redis.zadd(self.keys.match_log(match_id), {orjson.dumps(self.entry(n)): n})

    def entry(self, seq: int, event_id: str = "", player: str = "") -> dict:
        return {
            "seq": seq,
            "event_id": event_id or f"e{seq}",
            "player": player or self.entry_player,
            "at": CREATED_AT,
            "events": [{"type": "marker", "n": seq}],
        }

    def store_accepted(self, match_id: str, entry: dict) -> None:
        self.redis.zadd(self.keys.match_log(match_id), {orjson.dumps(entry): entry["seq"]})
        self.redis.hset(
            self.keys.match(match_id), mapping={"seq": entry["seq"], "view": orjson.dumps({"seq": entry["seq"]})}
        )

    @staticmethod
    def result(match_id: str, entry: dict, status: str = "accepted") -> dict:
        """The result record the projector announces for a log entry."""
        return {
            "v": 1,
            "match_id": match_id,
            "status": status,
            "duplicate": False,
            "view": {"seq": entry["seq"]},
            **entry,
        }

    def announce(self, match_id: str, result: dict) -> None:
        """PUBLISH a result on the match's live channel, as the projector does."""
        self.redis.publish(self.keys.live(match_id), orjson.dumps(result))

    def metric(self, name: str) -> float:
        lines = [line for line in self.http.get("/metrics").text.splitlines() if line.startswith(name + " ")]
        return float(lines[0].split()[1]) if lines else 0.0


@contextlib.contextmanager
def running_gateway(
    kind: type, kafka_bootstrap: str, topics: Topics, partitions: int, redis_db_url: str, redis_client, home, **env: str
) -> Iterator[GatewayUnderTest]:
    """A gateway of its own Redis prefix, ready, stopped afterwards."""
    prefix = unique_redis_prefix()
    process, url = gateway_process(kafka_bootstrap, topics, redis_db_url, prefix, home, **env)
    process.start()
    try:
        process.wait_ready(timeout=60)
        yield kind(url, Keys(prefix, partitions), redis_client, topics, kafka_bootstrap, process)
    finally:
        process.stop()
