"""`python -m services.projector`: run one projector (plylog.results + plylog.outcomes -> Redis).

Instances with the same --consumer (and topic prefix) form one Kafka consumer group and share
the partitions; each keeps its place in Redis (`<redis prefix>offsets:<consumer>`), written
atomically with the projection. Settings come from the environment: KAFKA_BOOTSTRAP_SERVERS,
REDIS_URL, PLYLOG_TOPIC_PREFIX, PLYLOG_REDIS_PREFIX (docs/projection.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import redis

from services.common import kafka_admin, redis_client
from services.common.redis_keys import Keys, prefix_from_env
from services.common.settings import load
from services.common.stage_trace import open_trace

from . import ops
from .projection import Projection
from .runner import DEFAULT_BATCH, run_group
from .store import Store, client_name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="plylog worker projector", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--name",
        default=f"projector-{os.environ.get('PLYLOG_INSTANCE', '1')}",
        help="instance name: its static group membership and log lines (distinct per instance)",
    )
    parser.add_argument(
        "--consumer",
        default="projector",
        help="consumer name: the offsets key in Redis and the Kafka group <topic prefix><consumer>",
    )
    parser.add_argument("--group", default=None, help="Kafka consumer group (default <topic prefix><consumer>)")
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH, help="records per Redis transaction at most")
    parser.add_argument("--no-publish", action="store_true", help="do not announce results on {p}live:{match}")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    logging.getLogger("kafka.net.selector").setLevel(logging.ERROR)  # "task ran for 0.14 s" under load: noise
    settings = load()
    topics = settings.topics
    partitions, problem = _check_topics(settings.kafka_bootstrap, topics.results, topics.outcomes)
    if problem:
        print(f"plylog projector: {problem}", file=sys.stderr)
        return 2
    keys = Keys(prefix_from_env(), partitions)
    client = redis_client.connect(settings.redis, client_name=client_name("projector", keys.prefix, args.name))
    try:
        client.ping()
    except redis.RedisError as error:
        print(
            f"plylog projector: Redis at {settings.redis_url} does not answer: {error}\n"
            f"  is it up? (`plylog status`, `plylog up`)",
            file=sys.stderr,
        )
        return 2
    ready, data_dir = os.environ.get("PLYLOG_READY_FILE"), os.environ.get("PLYLOG_DATA_DIR")
    projection = Projection(Store(client, keys, args.consumer, topics.outcomes), topics, publish=not args.no_publish)
    run_group(
        projection,
        settings.kafka_bootstrap,
        args.group or f"{topics.prefix}{args.consumer}",
        args.name,
        batch=args.batch,
        ready_file=Path(ready) if ready else None,
        metrics_file=Path(data_dir) / "metrics.json" if data_dir else None,
        ops=ops.start(settings, args.name),
        trace=open_trace(settings.trace_dir, "projector"),
    )
    return 0


def _check_topics(bootstrap: str, results: str, outcomes: str) -> tuple[int, str]:
    """(partitions of the results topic, "") or (0, what is wrong)."""
    try:
        counts = kafka_admin.partition_counts(
            bootstrap, [results, outcomes], timeout=30, wait_missing=kafka_admin.TOPICS_SETTLE_S
        )
    except Exception as error:  # noqa: BLE001 - the broker is the one thing we cannot work without
        return (
            0,
            f"cannot read topic metadata from {bootstrap}: {error}\n  is the broker up? (`plylog status`, `plylog up`)",
        )
    missing = [name for name, count in counts.items() if not count]
    if missing:
        return 0, f"topic(s) {', '.join(missing)} do not exist at {bootstrap} (`plylog up` creates them)"
    return counts[results], ""


if __name__ == "__main__":
    sys.exit(main())
