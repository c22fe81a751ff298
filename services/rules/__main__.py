"""`python -m services.rules [--name NAME] [--log-level info]`: run one rules worker.

Several workers with the same topic prefix form one consumer group and share the partitions.
Settings come from the environment (services/common/settings.py; docs/operations.md lists them).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from services.common import kafka_admin
from services.common.event_loop import chosen_loop
from services.common.settings import SettingsError, load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plylog worker rules", description=__doc__)
    default_name = f"rules-{os.environ.get('PLYLOG_INSTANCE', '1')}"
    parser.add_argument("--name", default=default_name, help="worker name (its data dir and log lines)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    from .faust_adapter import versions  # before Faust is imported: it may be the wrong one

    refused = versions.problem()
    if refused:
        print(f"plylog rules worker: {refused}", file=sys.stderr)
        return 2
    try:
        settings = load()
    except SettingsError as error:
        print(f"plylog rules worker: {error}", file=sys.stderr)
        return 2
    topics = settings.topics
    try:
        counts = kafka_admin.partition_counts(
            settings.kafka_bootstrap,
            [topics.moves, topics.results],
            timeout=30,
            wait_missing=kafka_admin.TOPICS_SETTLE_S,
        )
    except Exception as error:  # noqa: BLE001 - the broker is the one thing we cannot work without
        print(
            f"plylog rules worker: cannot read topic metadata from {settings.kafka_bootstrap}: {error}\n"
            f"  is the broker up? (`plylog status`, `plylog up`)",
            file=sys.stderr,
        )
        return 2
    moves, results = counts.get(topics.moves), counts.get(topics.results)
    if not moves or moves != results:
        print(
            f"plylog rules worker: {topics.moves} has {moves} partitions and {topics.results} {results}; "
            f"both must exist with the same count (`plylog up` creates them)",
            file=sys.stderr,
        )
        return 2
    try:
        kafka_admin.wait_for_group_coordinator(settings.kafka_bootstrap, topics.rules_group)
    except kafka_admin.KafkaAdminError as error:  # Faust asks again itself: say why, then go on
        print(f"plylog rules worker: {error}; starting anyway", file=sys.stderr)
    try:
        loop = chosen_loop(os.environ)
    except SettingsError as error:
        print(f"plylog rules worker: {error}", file=sys.stderr)
        return 2
    if loop == "uvloop":  # before Faust makes its loop (mode's documented switch)
        import mode.loop

        mode.loop.use("uvloop")
    from .app import create_app  # imported late: Faust is slow to import and --help should not wait
    from .faust_adapter.table import create_changelog_before_joining

    try:
        create_changelog_before_joining(settings, moves)
    except kafka_admin.KafkaAdminError as error:
        print(
            f"plylog rules worker: cannot make its changelog topic {topics.rules_changelog}: {error}", file=sys.stderr
        )
        return 2

    app = create_app(settings, partitions=moves, worker_name=args.name)
    logging.getLogger("plylog").setLevel(args.log_level.upper())
    from faust.worker import Worker

    worker = Worker(app, loglevel=args.log_level, quiet=True)
    return worker.execute_from_commandline() or 0


if __name__ == "__main__":
    sys.exit(main())
