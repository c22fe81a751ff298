"""`python -m services.matchmaker`: run the matchmaker (docs/matchmaking.md, "The service").

It folds plylog.lobby (seeks, pools, ticks) with the pure decider, creates the matches it makes on
plylog.moves, and keeps the lobby's view and the submissions' results in Redis. One instance per
installation: the lobby is one fold. Settings from the environment: KAFKA_BOOTSTRAP_SERVERS,
REDIS_URL, PLYLOG_TOPIC_PREFIX, PLYLOG_REDIS_PREFIX, PLYLOG_MATCHMAKER_TICK_S (default 1).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path

from services.common.redis_keys import Keys, prefix_from_env
from services.common.settings import SettingsError, env_number, load

from .service import MatchmakerService


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m services.matchmaker", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.WARNING)
    try:
        settings = load()
        tick_s = env_number(os.environ, "PLYLOG_MATCHMAKER_TICK_S", 1.0, lo=0.1, hi=60.0)
    except SettingsError as error:
        print(f"plylog matchmaker: {error}", file=sys.stderr)
        return 2
    ready = os.environ.get("PLYLOG_READY_FILE")
    # the lobby's keys carry no partition: the count only matters to match keys, which it never writes
    service = MatchmakerService(settings, Keys(prefix_from_env(), 1), tick_s, Path(ready) if ready else None)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(service.run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
