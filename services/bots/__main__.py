"""`python -m services.bots [--name NAME] [--bots ID,ID,...]`: run a bot service.

It plays the bots of games/bots (`bot:mcts-2`, `bot:most-parts`, ...) in every match where one
holds a seat: it reads plylog.results and produces their moves to plylog.moves, like any trusted
producer. Instances share the partitions (consumer group `<topic prefix>bots`). Settings from the
environment: KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, PLYLOG_TOPIC_PREFIX, PLYLOG_REDIS_PREFIX and
PLYLOG_BOT_SECRET (the key the Mastermind codemaker derives its secrets from; unset: made once
into $PLYLOG_HOME/bots.secret) and PLYLOG_BOT_WORKERS (the processes its searching bots think in,
shared round-robin between players; default: the cores it may use, at most 4).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path

from games.bots import bot_ids
from services.common import kafka_admin
from services.common.redis_keys import Keys, prefix_from_env
from services.common.settings import SettingsError, env_number, load, secret_key

from .service import BotService
from .thinking import Thinker, default_workers

BOT_SECRET_FILE = "bots.secret"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m services.bots", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--name",
        default=f"bots-{os.environ.get('PLYLOG_INSTANCE', '1')}",
        help="instance name (its client id and log lines)",
    )
    parser.add_argument(
        "--bots",
        default=",".join(bot_ids()),
        help=f"comma-separated bot ids to play (default every one: {', '.join(bot_ids())})",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes the searching bots think in (default PLYLOG_BOT_WORKERS, else the cores it may use, at most 4)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    settings = load()
    wanted = [b.strip() for b in args.bots.split(",") if b.strip()]
    unknown = sorted(set(wanted) - set(bot_ids()))
    if unknown:
        print(f"plylog bots: no bot {', '.join(unknown)}; known: {', '.join(bot_ids())}", file=sys.stderr)
        return 2
    try:
        key = secret_key(settings.home, os.environ, "PLYLOG_BOT_SECRET", BOT_SECRET_FILE)
        workers = args.workers or env_number(os.environ, "PLYLOG_BOT_WORKERS", default_workers(), lo=1, hi=256)
        if not 1 <= workers <= 256:
            raise SettingsError(f"--workers {workers} is out of range [1, 256]")
        partitions = kafka_admin.partition_counts(
            settings.kafka_bootstrap, [settings.topics.results], timeout=30, wait_missing=kafka_admin.TOPICS_SETTLE_S
        )
    except SettingsError as error:
        print(f"plylog bots: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - the broker is the one thing we cannot work without
        print(f"plylog bots: cannot read topic metadata from {settings.kafka_bootstrap}: {error}", file=sys.stderr)
        return 2
    results_partitions = partitions[settings.topics.results]
    if results_partitions is None:
        print(
            f"plylog bots: no topic {settings.topics.results} on {settings.kafka_bootstrap}; "
            "start the stack with `plylog up`",
            file=sys.stderr,
        )
        return 2
    try:  # as the rules worker does: a new broker has no coordinator yet, and aiokafka logs an ERROR
        kafka_admin.wait_for_group_coordinator(settings.kafka_bootstrap, settings.topics.bots_group)
    except kafka_admin.KafkaAdminError as error:  # aiokafka asks again itself: say why, then go on
        print(f"plylog bots: {error}; starting anyway", file=sys.stderr)
    ready = os.environ.get("PLYLOG_READY_FILE")
    # The partition count names a match's keys in the projection (each in its home partition's slot).
    service = BotService(
        settings,
        Keys(prefix_from_env(), results_partitions),
        Thinker(wanted, key, workers),
        args.name,
        Path(ready) if ready else None,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(service.run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
