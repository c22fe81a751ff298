"""`python -m services.tournaments`: run the tournament service (one instance).

It folds `plylog.tournaments`, creates the pairings' matches on `plylog.moves`, feeds their outcomes
back from `plylog.outcomes` and writes each tournament's view to Redis (docs/tournaments.md).
Settings from the environment: KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, PLYLOG_TOPIC_PREFIX,
PLYLOG_REDIS_PREFIX.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path

from services.common import kafka_admin
from services.common.redis_keys import prefix_from_env
from services.common.settings import load

from .service import TournamentService


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m services.tournaments", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    settings = load()
    topics = settings.topics
    try:
        found = kafka_admin.partition_counts(
            settings.kafka_bootstrap,
            [topics.tournaments, topics.outcomes, topics.moves],
            timeout=30,
            wait_missing=kafka_admin.TOPICS_SETTLE_S,
        )
    except Exception as error:  # noqa: BLE001 - the broker is the one thing we cannot work without
        print(
            f"plylog tournaments: cannot read topic metadata from {settings.kafka_bootstrap}: {error}", file=sys.stderr
        )
        return 2
    missing = [name for name, count in found.items() if not count]
    if missing:
        print(f"plylog tournaments: no topic {', '.join(missing)}; start the stack with `plylog up`", file=sys.stderr)
        return 2
    ready = os.environ.get("PLYLOG_READY_FILE")
    service = TournamentService(settings, prefix_from_env(), Path(ready) if ready else None)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(service.run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
