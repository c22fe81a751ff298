"""`plylog up | down | status | setup`: the local stack (Kafka, Redis, plylog's services).

Everything lives under one state directory ($PLYLOG_HOME, default <repo>/.plylog):

  stack.json          what is running and where (read by tests/conftest.py)
  run/<name>.json     identity of each process we started (pid, start time, exe, marker)
  run/<name>.pid      its pid (run/redis.pid is written by redis-server itself)
  logs/<name>.log     logs (kafka.log is log4j2's; kafka.out the JVM's stdout/stderr)
  kafka/              rendered server.properties + log4j2.properties, data/ (log.dirs)
  redis/              Redis working dir (no persistence)

`down` stops exactly the processes recorded in run/ and only after checking each pid is
still the process we started.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import typer

from services.common.settings import Settings, SettingsError

from . import _cluster_layout, _cluster_up, _kafka, _redis
from ._console import say
from ._down import down_stack
from ._errors import CliError
from ._state import is_infra
from ._status import component_rows, print_status
from ._up import Up

# --------------------------------------------------------------------------- options
HomeOpt = typer.Option(
    None,
    "--home",
    envvar="PLYLOG_HOME",
    show_envvar=True,
    help="State directory (pid files, logs, Kafka data). Default: .plylog/ in the repository root.",
)
KafkaPortOpt = typer.Option(
    None, "--kafka-port", envvar="PLYLOG_KAFKA_PORT", show_envvar=True, help="Broker client port. Default 9092."
)
ControllerPortOpt = typer.Option(
    None,
    "--controller-port",
    envvar="PLYLOG_KAFKA_CONTROLLER_PORT",
    show_envvar=True,
    help="KRaft controller port. Default 9093.",
)
RedisPortOpt = typer.Option(
    None, "--redis-port", envvar="PLYLOG_REDIS_PORT", show_envvar=True, help="Redis port. Default 6379."
)
GatewayPortOpt = typer.Option(
    None, "--gateway-port", envvar="PLYLOG_GATEWAY_PORT", show_envvar=True, help="HTTP gateway port. Default 8000."
)


def _settings(
    home: Path | None = None,
    kafka_port: int | None = None,
    controller_port: int | None = None,
    redis_port: int | None = None,
    gateway_port: int | None = None,
    **more,
) -> Settings:
    try:
        s = Settings.from_env(
            home=home,
            kafka_port=kafka_port,
            controller_port=controller_port,
            redis_port=redis_port,
            gateway_port=gateway_port,
            **more,
        )
    except SettingsError as exc:
        raise CliError(str(exc), "fix the environment variable or option") from None
    # The local stack always serves on loopback at the configured ports, whatever
    # KAFKA_BOOTSTRAP_SERVERS / REDIS_URL say (those point clients elsewhere).
    return dataclasses.replace(
        s, kafka_bootstrap=f"127.0.0.1:{s.kafka_port}", redis_url=f"redis://127.0.0.1:{s.redis_port}/0"
    )


# --------------------------------------------------------------------------- commands
def up(
    infra_only: bool = typer.Option(
        False, "--infra-only", help="Start only Kafka and Redis (and the topics); used by `make test`."
    ),
    cluster: bool = typer.Option(
        False,
        "--cluster",
        help="A Kafka cluster of 3 KRaft nodes (topics with 3 replicas, "
        "min.insync.replicas 2) and a Redis Cluster of 3 primaries + 3 "
        "replicas instead of one broker and one Redis, then 2 rules "
        "workers, 2 projectors and 2 gateways. Ports: broker i at "
        "PLYLOG_KAFKA_PORT+2i (controller PLYLOG_KAFKA_CONTROLLER_PORT+2i), "
        "Redis node i at PLYLOG_REDIS_PORT+i (bus +10000), gateway i "
        "at PLYLOG_GATEWAY_PORT+i.",
    ),
    rules_workers: int | None = typer.Option(
        None, "--rules-workers", min=1, max=64, help="Number of rules worker processes (default 1, 2 with --cluster)."
    ),
    timeout: float = typer.Option(
        120.0,
        "--timeout",
        envvar="PLYLOG_START_TIMEOUT",
        show_envvar=True,
        help="Seconds to wait for the broker to answer.",
    ),
    partitions: int | None = typer.Option(
        None,
        "--partitions",
        envvar="PLYLOG_PARTITIONS",
        show_envvar=True,
        min=1,
        help="Partitions of moves/results/deadletter (outcomes always 1). Default 12.",
    ),
    topic_prefix: str | None = typer.Option(
        None,
        "--topic-prefix",
        envvar="PLYLOG_TOPIC_PREFIX",
        show_envvar=True,
        help="Topic name prefix. Default 'plylog.'.",
    ),
    write_started: Path | None = typer.Option(
        None,
        "--write-started",
        metavar="FILE",
        help="Write the names of the components this run started to FILE (one a line), "
        "for `plylog down --only-listed FILE`.",
    ),
    home: Path | None = HomeOpt,
    kafka_port: int | None = KafkaPortOpt,
    controller_port: int | None = ControllerPortOpt,
    redis_port: int | None = RedisPortOpt,
    gateway_port: int | None = GatewayPortOpt,
) -> None:
    """Start the local stack: Redis, a single-node Kafka broker (KRaft), the contract
    topics, then plylog's services (rules workers, projector, gateway). With --cluster: a
    3-node Kafka cluster and a 6-node Redis Cluster on loopback, and two of each service.

    Idempotent: what already runs is left alone and reported; a second `up` starts
    nothing new. Downloads the Kafka jars with Maven on first use. On failure, stops what
    this run started and exits non-zero.
    """
    s = _settings(
        home, kafka_port, controller_port, redis_port, gateway_port, partitions=partitions, topic_prefix=topic_prefix
    )
    if cluster:
        s = _cluster_up.cluster_settings(s)
    for var, local in (("KAFKA_BOOTSTRAP_SERVERS", s.kafka_bootstrap), ("REDIS_URL", s.redis_url)):
        if os.environ.get(var) and os.environ[var] != local:
            say(f"[dim]note: {var}={os.environ[var]} is set; the local stack and its services use {local}[/dim]")
    workers = rules_workers or (_cluster_layout.SERVICE_INSTANCES if cluster else 1)
    Up(
        s, infra_only=infra_only, rules_workers=workers, timeout=timeout, write_started=write_started, cluster=cluster
    ).run()


def down(
    only_listed: Path | None = typer.Option(
        None,
        "--only-listed",
        metavar="FILE",
        help="Stop only the components named in FILE (as written by `up --write-started`).",
    ),
    component: list[str] | None = typer.Option(
        None, "--component", "-c", help="Stop only this component (repeatable), e.g. -c gateway -c rules-2."
    ),
    purge: bool = typer.Option(
        False, "--purge", help="Also delete the Kafka data and Redis files (all topics are lost; logs are kept)."
    ),
    home: Path | None = HomeOpt,
) -> None:
    """Stop what `plylog up` started: services, then Kafka, then Redis.

    Only processes recorded in the state dir are touched, each after checking its pid
    still belongs to the process we started (start time, executable, command line):
    SIGTERM, wait, then SIGKILL.
    """
    s = _settings(home)
    only: set[str] | None = None
    if only_listed is not None:
        try:
            only = {ln.strip() for ln in only_listed.read_text().splitlines() if ln.strip()}
        except OSError as exc:
            raise CliError(
                f"cannot read {only_listed}: {exc.strerror}", "pass the file written by `plylog up --write-started`"
            ) from None
    if component:
        only = (only or set()) | set(component)
    down_stack(s, only, purge)


def status(
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    check: bool = typer.Option(False, "--check", help="Exit 1 unless Kafka and Redis are running and answer."),
    home: Path | None = HomeOpt,
    kafka_port: int | None = KafkaPortOpt,
    redis_port: int | None = RedisPortOpt,
    gateway_port: int | None = GatewayPortOpt,
) -> None:
    """Show each component of the local stack: running/stopped, pid, address, log."""
    s = _settings(home, kafka_port, None, redis_port, gateway_port)
    rows = component_rows(s)
    if as_json:
        print(json.dumps({"home": str(s.home), "components": rows}, indent=1))
    else:
        print_status(s, rows)
    if check and not all(r["state"] == "running" for r in rows if is_infra(r["component"])):
        raise typer.Exit(1)


def setup(home: Path | None = HomeOpt) -> None:
    """Install what the local stack needs and is missing: the Kafka jars and its tools (Maven,
    once, into ${XDG_CACHE_HOME:-~/.cache}/plylog/) and redis-server (apt, as root).
    Checks Java 17+. Run by `make setup`."""
    java = _kafka.require_java()
    libs = _kafka.fetch_jars(echo=lambda m: say("kafka: " + m))
    say(f"kafka: Apache Kafka {_kafka.kafka_version()} jars in {libs} (java: {java})")
    tools = _kafka.fetch_tools(echo=lambda m: say("kafka: " + m))
    say(f"kafka: its command-line tools (the Java console consumer) in {tools}")
    redis = _redis.ensure_installed(echo=lambda m: say("redis: " + m))
    say(f"redis: {redis}")


def register(app: typer.Typer) -> None:
    """Add the stack commands to the `plylog` app."""
    app.command("up")(up)
    app.command("down")(down)
    app.command("status")(status)
    app.command("setup")(setup)
