"""`plylog bench [SCENARIO]...`: throughput, latency, replay, scaling and memory benchmarks."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from services.cli._errors import CliError
from services.common.settings import Settings, SettingsError, load, repo_root

if TYPE_CHECKING:
    from bench.stack import BenchStack


def results_subdir(quick: bool, planned: list[str], every: list[str], standard_loads: bool = True) -> str:
    """Where a report goes under bench/results/: only a full run of every scenario at the standard
    loads (the docs' table, kept in git) at the top; a subset, a quick run or a run at other loads
    (`--rate`, `--moves`) in an ignored folder, never committed by mistake."""
    if quick:
        return "quick"
    return "" if standard_loads and set(every) <= set(planned) else "partial"


SCENARIO_HELP = (
    "baseline (raw Kafka pass-through), pipeline (rules worker alone, then rules worker + projector; "
    "runs baseline too, for the ratio), latency (closed-loop bots at 1,000 moves/s), floor (the same "
    "load on Kafka's and Redis's hops with no work at them: the latency nothing could go under "
    "here), replay (offline "
    "fold per game; plylog rebuild), scale (1, 2 and 3 rules workers: moves/s and CPU per move; on the "
    "cluster when `plylog up --cluster` runs), memory (RSS at 10,000 active "
    "matches), recovery (a rules worker SIGKILLed with 1,000,000 finished-match moves and 1,000 active "
    "matches in the log: seconds until it is ready again; ~15 minutes a run), http (closed-loop bots "
    "through the gateway), ws (closed-loop clients over the seat socket, 2 per match like the peer's, "
    "then one client alone; with the whole machine's CPU per move), peer (boardgame.io playing Strands, the "
    "comparison: its closed-loop moves/s and its latency at the same offered rate; needs Node.js, "
    "not Kafka; skipped without node). Default: all."
)


def bench(
    scenarios: list[str] | None = typer.Argument(None, metavar="[SCENARIO]...", help=SCENARIO_HELP, show_default=False),
    quick: bool = typer.Option(
        False,
        "--quick",
        help="One run of each scenario with tiny loads (a few minutes); "
        "results go to bench/results/quick/ (git-ignored).",
    ),
    runs: int | None = typer.Option(None, "--runs", min=1, help="Runs per scenario (default 3, quick 1)."),
    moves: int | None = typer.Option(
        None, "--moves", min=200, help="Size of the throughput burst (default 100,000, quick 3,000)."
    ),
    rate: float | None = typer.Option(
        None,
        "--rate",
        min=50,
        max=5_000,
        help="Moves/s the latency bots offer together in `latency`, `floor` and the peer's latency run "
        "(default 1,000); the goals beside the figures are stated for the default.",
    ),
    partitions: int | None = typer.Option(
        None,
        "--partitions",
        min=1,
        envvar="PLYLOG_PARTITIONS",
        help="Partitions of the benchmark's topics (default 12).",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        file_okay=False,
        help="Where the JSON report and plots go (default bench/results/ for every scenario; a subset's in "
        "bench/results/partial/, --quick's in bench/results/quick/, both git-ignored).",
    ),
    profile: bool = typer.Option(
        False,
        "--profile",
        help="Sample every process under test with py-spy and write "
        "flame graphs (SVG) beside the report; figures of profiled "
        "runs are a little lower.",
    ),
) -> None:
    """Measure plylog against a raw Kafka baseline on a local stack, with a progress bar and a
    summary table; writes `bench/results/<timestamp>.json`, throughput and latency plots (PNG),
    the docs' benchmarks page shows the newest full report (`make docs`).

    Uses KAFKA_BOOTSTRAP_SERVERS / REDIS_URL when both are set, else the running local stack
    (PLYLOG_HOME), else starts Kafka and Redis itself (`plylog up --infra-only` in
    $PLYLOG_HOME/bench) and removes them afterwards. Every run makes its own topics and Redis keys
    and starts the rules workers / projector it measures; nothing of yours is touched. The peer
    (boardgame.io) needs Node.js and npm, not Kafka; every plylog figure with a counterpart is
    also shown as a ratio to the peer of the same invocation.
    Goals from the issue stand beside the figures; they are compared, not enforced.
    """
    from bench import report as reports
    from bench import runner
    from bench.procs import py_spy_command
    from bench.scenarios import FULL, QUICK
    from bench.stack import BenchStack, bench_dir

    names = list(scenarios or [])
    try:
        runner.plan(names)
    except KeyError as error:
        raise typer.BadParameter(str(error.args[0]), param_hint="SCENARIO") from None
    overrides = {name: value for name, value in (("runs", runs), ("moves", moves), ("latency_rate", rate)) if value}
    params = dataclasses.replace(QUICK if quick else FULL, **overrides)
    settings = load()
    root = repo_root() or Path.cwd()
    standard_loads = not overrides.keys() - {"runs"}  # every other override changes a load
    folder = results_subdir(quick, runner.plan(names), list(runner.SCENARIOS), standard_loads)
    out = out or root / "bench" / "results" / folder
    if profile and py_spy_command() is None:
        raise CliError("--profile needs py-spy, which is not installed", "pip install py-spy (a wheel from PyPI)")
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)  # retries on just-made topics are not news
    stamp = time.strftime("%Y%m%d-%H%M%S")
    profiles = out / f"{stamp}-profiles" if profile else None
    if runner.needs_stack(names):
        measured_on = bench_stack(settings, partitions or settings.partitions, console)
    else:  # the peer alone: no Kafka, no Redis
        measured_on = contextlib.nullcontext(BenchStack(None, None, bench_dir(settings.home)))
    with measured_on as stack:
        result = runner.run(stack, params, names, console, "quick" if quick else "full", profiles)
    if profiles is not None:
        result["profiles"] = profiles.name
    written = reports.write(result, out, stamp)
    reports.print_summary(result, console)
    console.print(
        "written: " + ", ".join(str(p) for p in written) + (f"; flame graphs in {profiles}/" if profiles else "")
    )
    failed = [name for name, s in result["scenarios"].items() if s["errors"]]
    if failed:
        raise CliError(
            f"some benchmark runs failed: {', '.join(failed)} (their errors are above and in {written[0]})",
            f"read the logs of the processes under test in {bench_dir(settings.home) / 'runs'}/",
        )


@contextlib.contextmanager
def bench_stack(settings: Settings, partitions: int, console: Console) -> Iterator[BenchStack]:
    """Kafka and Redis to measure on: from the environment, the running local stack, or a
    stack of its own started now and removed afterwards."""
    from bench.stack import BenchStack, bench_dir

    work = bench_dir(settings.home)
    if settings.env_kafka_bootstrap and settings.env_redis_url:
        _require_answers(settings.kafka_bootstrap, settings.redis_url, "KAFKA_BOOTSTRAP_SERVERS / REDIS_URL")
        console.print(f"using Kafka {settings.kafka_bootstrap} and Redis {settings.redis_url} (from the environment)")
        yield BenchStack(settings.kafka_bootstrap, settings.redis_url, work, partitions, settings.replication_factor)
        return
    running = _running_stack(settings.home)
    if running is not None:
        bootstrap, redis_url, services, replication = running
        console.print(
            f"using the running local stack in {settings.home} (Kafka {bootstrap}, Redis {redis_url}"
            + (f", {replication} replicas" if replication > 1 else "")
            + ")"
            + (f"; its services ({', '.join(services)}) keep running and share the CPUs" if services else "")
        )
        yield BenchStack(bootstrap, redis_url, work, partitions, replication)
        return
    with _own_stack(work, console) as (bootstrap, redis_url):
        yield BenchStack(bootstrap, redis_url, work, partitions)


def _running_stack(home: Path) -> tuple[str, str, list[str], int] | None:
    """(Kafka, Redis, names of plylog's services running beside them, replication factor) of the
    local stack (one broker, or the cluster of `plylog up --cluster`), if it answers."""
    from services.cli._state import is_infra, read_stack

    stack = read_stack(home)
    if not stack or not stack.get("kafka_bootstrap") or not stack.get("redis_url"):
        return None
    try:
        _require_answers(stack["kafka_bootstrap"], stack["redis_url"], f"the local stack in {home}")
    except CliError:
        return None
    services = sorted(name for name in stack.get("components", {}) if not is_infra(name))
    if stack.get("cluster"):
        _as_operator(home)
    return (
        stack["kafka_bootstrap"],
        stack["redis_url"],
        services,
        int(stack.get("settings", {}).get("replication_factor", 1)),
    )


def _as_operator(home: Path) -> None:
    """On `plylog up --cluster`'s cluster the benchmark makes topics of its own and starts services
    on them: it, and they, log in to Kafka as the operator (docs/security/kafka.md), unless the
    environment names a user of its own."""
    from services.cli import _kafka_cluster
    from services.common import kafka_acls

    if (
        os.environ.get("PLYLOG_KAFKA_USERNAME", kafka_acls.SERVICE_USERS["reader"])
        != kafka_acls.SERVICE_USERS["reader"]
    ):
        return
    try:
        os.environ.update(_kafka_cluster.operator_auth(Settings.from_env(home=home)).env())
    except SettingsError as error:
        raise CliError(f"cannot log in to the local cluster's Kafka: {error}", "") from None


@contextlib.contextmanager
def _own_stack(home: Path, console: Console) -> Iterator[tuple[str, str]]:
    """`plylog up --infra-only` in `home`; afterwards `plylog down` of what it started (--purge
    when it started both: the data of a benchmark stack is of no further use)."""
    env = {**os.environ, "PLYLOG_HOME": str(home)}
    plylog = [sys.executable, "-m", "services.cli.main"]
    with tempfile.NamedTemporaryFile("r", prefix="plylog-bench-started.", suffix=".txt") as started:
        console.print(f"no local stack is running: starting Kafka and Redis in {home} ...")
        if subprocess.run([*plylog, "up", "--infra-only", "--write-started", started.name], env=env).returncode:
            raise CliError(
                "could not start Kafka and Redis for the benchmark (see above)",
                "fix what it says, or start a stack yourself (`plylog up --infra-only`)",
            )
        names = set(Path(started.name).read_text().split())
        try:
            settings = Settings.from_env(env)
            yield f"127.0.0.1:{settings.kafka_port}", f"redis://127.0.0.1:{settings.redis_port}/0"
        finally:
            stop = ["down", "--purge"] if {"kafka", "redis"} <= names else ["down", "--only-listed", started.name]
            subprocess.run([*plylog, *stop], env=env)


def _require_answers(bootstrap: str, redis_url: str, where: str) -> None:
    import redis

    from services.common import kafka_admin, redis_client

    if kafka_admin.metadata_answers(bootstrap, timeout=5) is None:
        raise CliError(f"no Kafka broker answers at {bootstrap} ({where})", "start it (`plylog up --infra-only`)")
    client = None
    try:
        client = redis_client.connect(redis_url, socket_connect_timeout=3)
        client.ping()
    except (redis.RedisError, redis.exceptions.RedisClusterException) as error:
        raise CliError(
            f"Redis at {redis_url} does not answer ({where}): {error}", "start it (`plylog up --infra-only`)"
        ) from None
    finally:
        if client is not None:
            client.close()


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
