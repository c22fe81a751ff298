"""`python -m services.notifier`: run the notifier (plylog.results + plylog.outcomes -> webhooks and
e-mail; docs/notifications.md). Run one: its offsets and outbox are in Redis. It reads players'
keys and sealed profiles (plylog.player-keys, plylog.profiles) to open their addresses.

Settings from the environment: KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, PLYLOG_TOPIC_PREFIX,
PLYLOG_REDIS_PREFIX; PLYLOG_SMTP_HOST (unset: no e-mail), PLYLOG_SMTP_PORT (25), PLYLOG_SMTP_FROM,
PLYLOG_SMTP_STARTTLS, PLYLOG_SMTP_USERNAME, PLYLOG_SMTP_PASSWORD; PLYLOG_NOTIFY_ALLOW_PRIVATE and the
PLYLOG_NOTIFY_* limits (docs/notifications.md, "Settings").
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import redis

from services.common import redis_client
from services.common.event_loop import chosen_loop
from services.common.kafka_assigned import AssignedReader
from services.common.notify_store import Registry, guard_of
from services.common.profile_tables import ProfileTables
from services.common.redis_keys import prefix_from_env
from services.common.settings import SettingsError, env_number, load

from .channels import Channels, SmtpSettings
from .outbox import Outbox
from .service import Notifier, NotifierConfig

TABLES_READY_S = 30.0


def smtp_settings(env: Mapping[str, str]) -> SmtpSettings | None:
    host = env.get("PLYLOG_SMTP_HOST", "").strip()
    if not host:
        return None
    return SmtpSettings(
        host=host,
        port=env_number(env, "PLYLOG_SMTP_PORT", 25, lo=1, hi=65535),
        sender=env.get("PLYLOG_SMTP_FROM", "").strip() or "plylog <notifications@localhost>",
        starttls=env.get("PLYLOG_SMTP_STARTTLS", "").strip().lower() in ("1", "true", "yes"),
        username=env.get("PLYLOG_SMTP_USERNAME", ""),
        password=env.get("PLYLOG_SMTP_PASSWORD", ""),
    )


async def _run(build: Callable[[], Notifier], ready_file: Path | None) -> None:
    notifier = build()  # in the event loop: aiokafka's consumer wants a running one
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    def ready() -> None:
        if ready_file is not None:
            ready_file.touch()

    if not await notifier.contacts.wait_ready(TABLES_READY_S):
        logging.getLogger("plylog.notifier").warning(
            "profiles not read within %.0f s; players' own addresses are retried until they are", TABLES_READY_S
        )
    try:
        await notifier.run(stop, ready)
    finally:
        await notifier.channels.close()
        await asyncio.to_thread(notifier.contacts.stop)
        logging.getLogger("plylog.notifier").info("stopped: %s", dict(notifier.counts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m services.notifier", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="notifier", help="its Kafka client id and log lines")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        settings = load()
        config = NotifierConfig.from_env()
        smtp = smtp_settings(os.environ)
        loop_kind = chosen_loop(os.environ)
    except SettingsError as error:
        print(f"plylog notifier: {error}", file=sys.stderr)
        return 2
    prefix = prefix_from_env()
    os.nice(config.niceness)  # background work: the match path's processes go first

    def build() -> Notifier:
        client = redis_client.connect_async(settings.redis, client_name=f"plylog-{args.name}")
        return Notifier(
            AssignedReader(settings.kafka_bootstrap, settings.kafka_auth, args.name),
            Outbox(client, prefix, max_pending=config.max_pending, retention_s=config.retention_s),
            Registry(client, prefix),
            Channels(guard_of(settings, os.environ), smtp),
            settings.topics,
            config,
            # players' own addresses: their sealed profiles (read-only; docs/personal-data.md)
            ProfileTables.reading(
                settings.kafka_bootstrap, settings.topics, settings.kafka_auth, client=f"plylog-{args.name}"
            ),
        )

    ready = os.environ.get("PLYLOG_READY_FILE")
    if loop_kind == "uvloop":
        import uvloop

        uvloop.install()
    try:
        asyncio.run(_run(build, Path(ready) if ready else None))
    except (LookupError, redis.RedisError, OSError) as error:
        print(f"plylog notifier: {error}\n  is the stack up? (`plylog status`, `plylog up`)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
