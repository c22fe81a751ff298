"""The `plylog` command line.

This file is only the list of command modules. To add commands, write
`services/cli/<topic>.py` with a `register(app: typer.Typer)` function that adds them
(`app.command("name")(func)` or `app.add_typer(sub_app, name="topic")`), and add one
line to COMMAND_MODULES below. Fail with `services.cli._errors.CliError(cause, hint,
log=...)`: main() prints it as a short message, never a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from services.cli._errors import CliError

COMMAND_MODULES = [
    "services.cli.stack",  # up, down, status, setup
    "services.cli.replay",  # replay
    "services.cli.export",  # export
    "services.cli.verify",  # verify (offline), keys list|rotate
    "services.cli.schemas_cmd",  # schemas export
    "services.cli.workers",  # worker rules|projector
    "services.cli.audit",  # audit
    "services.cli.projector_cmd",  # rebuild
    "services.cli.play",  # login, whoami, new, join, tokens, act, show, watch, play, leaderboard (HTTP)
    "services.cli.bench_cmd",  # bench
    "services.cli.bots_cmd",  # bot-eval (offline, through the fold)
    "services.cli.bots_admin",  # bots list|enable|disable
    "services.cli.players_cmd",  # players erase|name
    "services.cli.kafka_cmd",  # kafka-acls
    "services.cli.tournament_cmd",  # tournament create|register|withdraw|start|list|show|export|replay
]

app = typer.Typer(
    name="plylog",
    help="plylog: an event-sourced match service for turn-based games on Kafka and Redis.\n\n"
    "Start here: `plylog up` runs the local stack (Kafka, Redis, plylog's services), "
    "`plylog status` shows it, `plylog down` stops it. State and logs are kept in "
    ".plylog/ (PLYLOG_HOME).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def _print_error(exc: CliError) -> None:
    err = sys.stderr
    print(f"plylog: error: {exc.cause}", file=err)
    if exc.hint:
        print(f"  what to do: {exc.hint}", file=err)
    for log, lines in exc.log_tails(20).items():
        if lines:
            print(f"  last {len(lines)} lines of {log}:", file=err)
            for line in lines:
                print(f"    {line}", file=err)


def main() -> None:
    """Console-script entry point (`plylog = services.cli.main:main`)."""
    from services.cli._kafka_cluster import use_reader_credentials
    from services.common.settings import SettingsError

    use_reader_credentials(os.environ)  # on a local cluster's machine: read with the reader's user
    try:
        app()
    except CliError as exc:
        _print_error(exc)
        sys.exit(exc.exit_code)
    except SettingsError as exc:
        print(f"plylog: error: {exc}", file=sys.stderr)
        print("  what to do: fix that environment variable or option", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("plylog: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("PLYLOG_DEBUG"):
            raise
        print(f"plylog: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("  what to do: rerun with PLYLOG_DEBUG=1 to see the traceback, and report it", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
