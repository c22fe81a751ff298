"""The local Kafka cluster of `plylog up --cluster`: three KRaft nodes (each broker + controller)
from the same Apache jars as the single broker (services/cli/_kafka.py).

Layout per node (N = 1, 2, 3):
  $PLYLOG_HOME/kafka-N/server.properties, log4j2.properties   (rendered from deploy/kafka/)
  $PLYLOG_HOME/kafka-N/data/                                  (log.dirs, formatted once)
  $PLYLOG_HOME/logs/kafka-N/kafka.log (log4j2), $PLYLOG_HOME/logs/kafka-N.out (JVM output)
  $PLYLOG_HOME/kafka-cluster.id                              (one cluster id for the three)
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from services.common.settings import Settings

from . import _kafka
from ._cluster_layout import KafkaNode, voters
from ._proc import ProcRecord, StackError, record_for

#: per node: three share 2 cores and the machine with everything else (their RSS: docs/operations.md)
JVM_FLAGS = [
    "-Xms128m",
    "-Xmx384m",
    "-XX:MaxDirectMemorySize=128m",
    *[flag for flag in _kafka.JVM_FLAGS if not flag.startswith("-Xm")],
]


def node_dir(s: Settings, node: KafkaNode) -> Path:
    return s.home / node.name


def node_log(s: Settings, node: KafkaNode) -> Path:
    return s.logs_dir / node.name / "kafka.log"


def node_out(s: Settings, node: KafkaNode) -> Path:
    return s.logs_dir / f"{node.name}.out"


def cluster_id(s: Settings) -> str:
    path = s.home / "kafka-cluster.id"
    if path.is_file() and path.read_text().strip():
        return path.read_text().strip()
    cid = _kafka.new_cluster_id()
    path.write_text(cid + "\n")
    return cid


def prepare(s: Settings, node: KafkaNode, java: str, libs: Path, echo=print) -> Path:
    """Render the node's config and format its storage once. Returns its server.properties."""
    ndir = node_dir(s, node)
    data = ndir / "data"
    data.mkdir(parents=True, exist_ok=True)
    (s.logs_dir / node.name).mkdir(parents=True, exist_ok=True)
    server, log4j = ndir / "server.properties", ndir / "log4j2.properties"
    src = _kafka.deploy_dir()
    _kafka._render(
        src / "cluster-server.properties",
        server,
        {
            "NODE_ID": str(node.node_id),
            "VOTERS": voters(s),
            "KAFKA_PORT": str(node.port),
            "CONTROLLER_PORT": str(node.controller_port),
            "DATA_DIR": str(data),
        },
    )
    _kafka._render(src / "log4j2.properties", log4j, {"LOG_DIR": str(s.logs_dir / node.name)})
    formatted = ndir / "formatted.json"
    if (data / "meta.properties").is_file():
        info = json.loads(formatted.read_text()) if formatted.is_file() else {}
        if info.get("voters") not in (None, voters(s)):
            raise StackError(
                f"the Kafka data of {node.name} was formatted for the controllers {info['voters']}, not {voters(s)}",
                "use the ports it was made with, or `plylog down --purge` (all topics are lost)",
            )
        return server
    cid = cluster_id(s)
    log = s.logs_dir / f"{node.name}-format.log"
    echo(f"formatting storage in {data} (cluster id {cid})")
    with open(log, "w") as out:
        rc = subprocess.run(
            [
                java,
                f"-Dlog4j2.configurationFile={log4j}",
                "-cp",
                f"{libs}/*",
                "kafka.tools.StorageTool",
                "format",
                "-t",
                cid,
                "-c",
                str(server),
                "--ignore-formatted",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        ).returncode
    if rc != 0:
        raise StackError(
            f"formatting the storage of {node.name} failed (exit {rc})",
            f"read {log}; `plylog down --purge` wipes the local Kafka data",
            log=log,
        )
    formatted.write_text(json.dumps({"cluster_id": cid, "voters": voters(s), "kafka": _kafka.kafka_version()}))
    return server


def marker(s: Settings, node: KafkaNode) -> str:
    """Tells this node's JVM from any other (and from the single broker's)."""
    return f"-Dplylog.node={s.home}/{node.name}"


def start(s: Settings, node: KafkaNode, java: str, libs: Path, server: Path) -> tuple[subprocess.Popen, ProcRecord]:
    log4j = node_dir(s, node) / "log4j2.properties"
    argv = [
        java,
        *JVM_FLAGS,
        marker(s, node),
        f"-Dkafka.logs.dir={s.logs_dir / node.name}",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        f"{libs}/*",
        "kafka.Kafka",
        str(server),
    ]
    out = node_out(s, node)
    with open(out, "ab") as fh:
        fh.write(f"\n=== plylog up: starting {node.name} at {time.ctime()} ===\n".encode())
        fh.flush()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=str(node_dir(s, node)),
            close_fds=True,
        )
    for _ in range(50):
        rec = record_for(node.name, proc.pid, marker(s, node), node_log(s, node), address=node.address, argv=argv)
        if rec is not None:
            return proc, rec
        time.sleep(0.02)
    raise StackError(f"the JVM of {node.name} exited immediately", f"read {out}", log=out)
