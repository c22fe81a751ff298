"""`plylog worker rules|projector`: run one service process in the foreground."""

from __future__ import annotations

import importlib.util
import os
import sys

import typer

from services.cli._errors import CliError

worker_app = typer.Typer(
    help="Run one plylog service in the foreground (`plylog up` runs them in the background).", no_args_is_help=True
)


def _exec(module: str, args: list[str]) -> None:
    if importlib.util.find_spec(module) is None:
        raise CliError(f"{module} is not installed in this checkout", "update plylog (git pull; make setup)")
    os.execv(sys.executable, [sys.executable, "-m", module, *args])


@worker_app.command("rules")
def rules(
    name: str = typer.Option("rules-1", help="Worker name: its data dir and consumer instance id."),
    log_level: str = typer.Option("info", help="debug, info, warning or error."),
) -> None:
    """A rules worker: folds plylog.moves into match states, emits results and outcomes.

    Workers with the same topic prefix (PLYLOG_TOPIC_PREFIX) share the partitions; give each a
    distinct --name. Broker address from KAFKA_BOOTSTRAP_SERVERS (default the local stack).
    """
    _exec("services.rules", ["--name", name, "--log-level", log_level])


@worker_app.command("projector", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def projector(ctx: typer.Context) -> None:
    """A projector: applies plylog.results and plylog.outcomes to Redis (views, ratings, stats).
    Extra arguments go to `python -m services.projector` (see its --help)."""
    _exec("services.projector", list(ctx.args))


def register(app: typer.Typer) -> None:
    app.add_typer(worker_app, name="worker")
