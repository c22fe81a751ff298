"""The local Redis Cluster of `plylog up --cluster`: six `redis-server --cluster-enabled yes`
nodes on loopback, joined by `redis-cli --cluster create ... --cluster-replicas 1` into three
primaries with a replica each. No persistence (like the single Redis); each node keeps its
cluster configuration in $PLYLOG_HOME/redis-N/nodes.conf, so a node restarted alone (a fault
test) rejoins the cluster as it was."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis

from services.common.settings import Settings

from ._cluster_layout import REDIS_REPLICAS, RedisNode
from ._errors import CliError
from ._proc import ProcRecord, record_for

NODE_TIMEOUT_MS = 3000  # a primary unreachable this long is failed over to its replica


def node_dir(s: Settings, node: RedisNode) -> Path:
    return s.home / node.name


def node_log(s: Settings, node: RedisNode) -> Path:
    return s.logs_dir / f"{node.name}.log"


def argv(s: Settings, node: RedisNode, binary: str) -> list[str]:
    return [
        binary,
        "--port",
        str(node.port),
        "--bind",
        "127.0.0.1",
        "--protected-mode",
        "yes",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        str(node_dir(s, node) / "nodes.conf"),
        "--cluster-node-timeout",
        str(NODE_TIMEOUT_MS),
        "--cluster-require-full-coverage",
        "yes",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "yes",
        "--pidfile",
        str(s.run_dir / f"{node.name}.pid"),
        "--dir",
        str(node_dir(s, node)),
        "--logfile",
        str(node_log(s, node)),
        "--maxmemory",
        "256mb",
    ]


def forget_cluster(s: Settings, node: RedisNode) -> None:
    """Before a new cluster is made: no data survives a stop anyway, so the old membership goes too."""
    (node_dir(s, node) / "nodes.conf").unlink(missing_ok=True)


def start(s: Settings, node: RedisNode, binary: str, timeout: float = 15.0) -> ProcRecord:
    node_dir(s, node).mkdir(parents=True, exist_ok=True)
    s.run_dir.mkdir(parents=True, exist_ok=True)
    pidfile = s.run_dir / f"{node.name}.pid"
    pidfile.unlink(missing_ok=True)
    command = argv(s, node, binary)
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise CliError(
            f"{node.name} refused to start (exit {done.returncode}): {(done.stderr or done.stdout)[:200]}",
            f"read {node_log(s, node)}",
            log=node_log(s, node),
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pidfile.is_file() and pidfile.read_text().strip().isdigit() and ping(node):
            rec = record_for(
                node.name,
                int(pidfile.read_text()),
                f":{node.port}",
                node_log(s, node),
                address=node.address,
                argv=command,
            )
            if rec is not None:
                return rec
        time.sleep(0.05)
    raise CliError(
        f"{node.name} did not answer PING on port {node.port} within {timeout:g}s",
        f"read {node_log(s, node)}",
        log=node_log(s, node),
    )


def _client(node: RedisNode) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=node.port, socket_connect_timeout=1, socket_timeout=3)


def ping(node: RedisNode) -> bool:
    try:
        return bool(_client(node).ping())
    except redis.RedisError:
        return False


def cluster_state(node: RedisNode) -> dict[str, str]:
    """CLUSTER INFO of the node ({} when it does not answer)."""
    try:
        return {k: str(v) for k, v in _client(node).cluster("INFO").items()}
    except (redis.RedisError, AttributeError):
        return {}


def role(node: RedisNode) -> str:
    """ "master" or "slave" (Redis's words), or "?" when the node does not answer."""
    try:
        return _client(node).role()[0].decode()
    except (redis.RedisError, IndexError):
        return "?"


def formed(nodes: list[RedisNode]) -> bool:
    """Every node answers and sees a healthy cluster of all of them with every slot served."""
    for node in nodes:
        info = cluster_state(node)
        if (
            info.get("cluster_state") != "ok"
            or info.get("cluster_known_nodes") != str(len(nodes))
            or info.get("cluster_slots_ok") != "16384"
        ):
            return False
    return True


def create(nodes: list[RedisNode], echo=print, timeout: float = 60.0) -> None:
    """`redis-cli --cluster create` over the nodes, then wait until every node agrees."""
    cli = shutil.which("redis-cli")
    if cli is None:
        raise CliError(
            "redis-cli is not on PATH (it makes the Redis Cluster)",
            "install Debian's redis-tools (comes with redis-server)",
        )
    echo(
        f"joining {len(nodes)} nodes into a cluster ({len(nodes) // (REDIS_REPLICAS + 1)} primaries, "
        f"{REDIS_REPLICAS} replica each)"
    )
    done = subprocess.run(
        [
            cli,
            "--cluster",
            "create",
            *(n.address for n in nodes),
            "--cluster-replicas",
            str(REDIS_REPLICAS),
            "--cluster-yes",
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    if done.returncode != 0:
        raise CliError(
            f"redis-cli --cluster create failed (exit {done.returncode}): {(done.stdout + done.stderr).strip()[-400:]}",
            "read the Redis logs in the state dir",
        )
    deadline = time.monotonic() + timeout
    while not formed(nodes):
        if time.monotonic() > deadline:
            raise CliError(
                f"the Redis Cluster was not healthy {timeout:g}s after it was made",
                "read the Redis logs (cluster_state in CLUSTER INFO)",
            )
        time.sleep(0.2)
