"""`plylog up --cluster`: start the Kafka cluster and the Redis Cluster (what is not running yet).

Called by _up.Up with its `Launch`, which keeps the records, reports the lines and rolls back what
this run started if anything fails."""

from __future__ import annotations

import dataclasses
import time

from services.common.settings import Settings, SettingsError

from . import _kafka, _kafka_cluster, _redis, _redis_cluster
from ._cluster_layout import (
    MIN_INSYNC_REPLICAS,
    REPLICATION_FACTOR,
    bootstrap,
    check_ports,
    kafka_nodes,
    redis_nodes,
    redis_url,
)
from ._errors import CliError
from ._launch import Launch
from ._logs import file_size
from ._state import is_cluster_record

SINGLE = ("kafka", "redis")


def cluster_settings(s: Settings) -> Settings:
    """The settings services get on the local cluster: every broker, the Redis Cluster, 3 replicas."""
    try:
        check_ports(s)
    except SettingsError as exc:
        raise CliError(str(exc), "set other port bases") from None
    return dataclasses.replace(
        s,
        kafka_bootstrap=bootstrap(s),
        redis_url=redis_url(s),
        replication_factor=REPLICATION_FACTOR,
        min_insync_replicas=MIN_INSYNC_REPLICAS,
    )


def ensure_acls(up: Launch, bootstrap_servers: str) -> None:
    """Every service's ACLs on the installation's topics (kafka_acls.grants); idempotent."""
    from services.common import kafka_acls

    count = kafka_acls.ensure(bootstrap_servers, up.s.topics, auth=_kafka_cluster.operator_auth(up.s), timeout=60)
    up.line("acls", f"{count} ACLs for the users {', '.join(kafka_acls.SERVICE_USERS.values())} in place")


def service_credentials(s: Settings, service: str) -> dict[str, str]:
    """The environment that gives a service of the local cluster its own Kafka user."""
    from services.common import kafka_acls

    return _kafka_cluster.user_auth(s, kafka_acls.SERVICE_USERS[service]).env()


def refuse_mixed(up: Launch, cluster: bool) -> None:
    """A single-node stack and a cluster cannot share one state dir."""
    running = [name for name, rec in up.records.items() if rec.alive()]
    other = [n for n in running if (n in SINGLE) == cluster and (is_cluster_record(n) or n in SINGLE)]
    if other:
        what = "a single-node stack" if cluster else "a cluster"
        raise CliError(
            f"{what} is running in {up.s.home} ({', '.join(sorted(other))})",
            "stop it first (`plylog down`), or use another PLYLOG_HOME",
        )


def start_infra(up: Launch) -> None:
    redis_cluster(up)
    kafka_cluster(up)


def redis_cluster(up: Launch) -> None:
    s, nodes = up.s, redis_nodes(up.s)
    running = [n for n in nodes if up.existing(n.name) is not None]
    if len(running) == len(nodes) and _redis_cluster.formed(nodes):
        up.line("redis", f"cluster already running ({len(nodes)} nodes from {nodes[0].address})")
        return
    binary = _redis.ensure_installed(echo=lambda m: up.line("redis", m))
    fresh = not running  # a new cluster; else restart the nodes that are gone into the one that runs
    for node in nodes:
        if node in running:
            continue
        up.need_port(node.port, node.name, "PLYLOG_REDIS_PORT")
        up.need_port(node.bus_port, f"{node.name} (cluster bus)", "PLYLOG_REDIS_PORT")
        if fresh:
            _redis_cluster.forget_cluster(s, node)
        t0 = time.monotonic()
        rec = _redis_cluster.start(s, node, binary)
        rec.ready_seconds = round(time.monotonic() - t0, 2)
        up.keep(rec)
        up.line(node.name, f"[green]started[/green] (pid {rec.pid}, {rec.address})")
    if fresh:
        _redis_cluster.create(nodes, echo=lambda m: up.line("redis", m))
    deadline = time.monotonic() + 60
    while not _redis_cluster.formed(nodes):
        if time.monotonic() > deadline:
            raise CliError(
                "the Redis Cluster is not healthy (cluster_state is not ok on every node)",
                "`plylog down` and `plylog up --cluster` make a new one",
                log=_redis_cluster.node_log(s, nodes[0]),
            )
        time.sleep(0.2)
    primaries = [n.name for n in nodes if _redis_cluster.role(n) == "master"]
    up.line("redis", f"cluster ok: primaries {', '.join(primaries)}; replicas the others")


def kafka_cluster(up: Launch) -> None:
    from services.common import kafka_admin

    s, nodes = up.s, kafka_nodes(up.s)
    missing = [n for n in nodes if up.existing(n.name) is None]
    if not missing:
        try:
            operator = _kafka_cluster.operator_auth(s)
        except SettingsError as error:
            raise CliError(str(error), "`plylog down --purge`, then `plylog up --cluster`") from None
        if kafka_admin.metadata_answers(bootstrap(s), timeout=5, auth=operator) is None:
            raise CliError(
                f"our Kafka cluster runs but does not answer metadata requests at {bootstrap(s)}",
                "it may still be starting: wait and retry, or `plylog down` then `plylog up --cluster`",
            )
        up.line("kafka", f"cluster already running ({len(nodes)} nodes, {bootstrap(s)})")
        return
    java = _kafka.require_java()
    libs = _kafka.fetch_jars(echo=lambda m: up.line("kafka", m))
    children = {}
    t0 = time.monotonic()
    for node in missing:
        up.need_port(node.port, f"{node.name} (broker)", "PLYLOG_KAFKA_PORT")
        up.need_port(node.controller_port, f"{node.name} (controller)", "PLYLOG_KAFKA_CONTROLLER_PORT")
        server = _kafka_cluster.prepare(s, node, java, libs, echo=lambda m, n=node: up.line(n.name, m))
        child, rec = _kafka_cluster.start(s, node, java, libs, server)
        up.keep(rec, child)
        children[node] = (child, rec, file_size(_kafka_cluster.node_out(s, node)))
        up.line(node.name, f"starting (pid {rec.pid}, {rec.address}) ...")
    operator = _kafka_cluster.operator_auth(s)
    deadline = time.monotonic() + up.timeout
    waiting = dict(children)
    while waiting:
        for node, (child, rec, since) in list(waiting.items()):
            code = child.poll()
            if code is not None:
                out = _kafka_cluster.node_out(s, node)
                raise CliError(
                    f"{node.name} exited while starting (exit code {code})",
                    f"read {out}",
                    log=out,
                    extra_logs=(_kafka_cluster.node_log(s, node),),
                    since={out: since},
                )
            if kafka_admin.metadata_answers(node.address, timeout=2, auth=operator) is not None:
                rec.ready_seconds = round(time.monotonic() - t0, 2)
                up.save(rec)
                up.line(node.name, f"[green]started[/green] (pid {rec.pid}, ready in {rec.ready_seconds:.1f}s)")
                del waiting[node]
        if waiting and time.monotonic() > deadline:
            names = ", ".join(n.name for n in waiting)
            raise CliError(
                f"{names} did not answer a metadata request within {up.timeout:g}s",
                "on a slow machine retry with a longer --timeout",
                log=_kafka_cluster.node_log(s, next(iter(waiting))),
            )
        time.sleep(0.3)
    _wait_for_brokers(bootstrap(s), len(nodes), up.timeout, operator)
    up.line("kafka", "SASL/SCRAM-SHA-512 and ACLs on: one Kafka user per service (docs/security/kafka.md)")


def _wait_for_brokers(servers: str, count: int, timeout: float, auth) -> None:
    """Until the cluster's metadata lists every broker (topics need all three replicas)."""
    from services.common import kafka_admin

    deadline = time.monotonic() + timeout
    while True:
        cluster = kafka_admin.metadata_answers(servers, timeout=3, auth=auth)
        if cluster is not None and len(cluster.get("brokers") or []) >= count:
            return
        if time.monotonic() > deadline:
            raise CliError(
                f"the Kafka cluster at {servers} lists fewer than {count} brokers after {timeout:g}s",
                "read the brokers' logs in the state dir",
            )
        time.sleep(0.3)
