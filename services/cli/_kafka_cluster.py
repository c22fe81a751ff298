"""The local Kafka cluster of `plylog up --cluster`: three KRaft nodes (each broker + controller)
from the same Apache jars as the single broker (services/cli/_kafka.py).

Layout per node (N = 1, 2, 3):
  $PLYLOG_HOME/kafka-N/server.properties, log4j2.properties   (rendered from deploy/kafka/)
  $PLYLOG_HOME/kafka-N/data/                                  (log.dirs, formatted once)
  $PLYLOG_HOME/logs/kafka-N/kafka.log (log4j2), $PLYLOG_HOME/logs/kafka-N.out (JVM output)
  $PLYLOG_HOME/kafka-cluster.id                              (one cluster id for the three)
  $PLYLOG_HOME/kafka-users.json                              (every Kafka user's password, mode 0600)

Authentication and authorization (docs/security/kafka.md): clients and the brokers among
themselves use SASL/SCRAM-SHA-512 on the client listener, the controllers SASL/PLAIN on the
controller listener; the StandardAuthorizer allows only what services/common/kafka_acls.py grants.
The SCRAM users are written into the metadata when the storage is formatted (`--add-scram`).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from collections.abc import MutableMapping
from pathlib import Path

from services.common import kafka_acls
from services.common.kafka_auth import DEFAULT_MECHANISM, KafkaAuth
from services.common.settings import Settings, SettingsError

from . import _kafka
from ._cluster_layout import KafkaNode, voters
from ._errors import CliError
from ._proc import ProcRecord, record_for

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


USERS_FILE = "kafka-users.json"


def users_file(s: Settings) -> Path:
    return s.home / USERS_FILE


def passwords(s: Settings, *, make: bool = False) -> dict[str, str]:
    """{user: password} of the cluster's Kafka users, from $PLYLOG_HOME/kafka-users.json (made once,
    mode 0600, with `make`). SettingsError when it is missing or does not name every user."""
    path = users_file(s)
    wanted = (*kafka_acls.SCRAM_USERS, kafka_acls.CONTROLLER)
    if make and not path.exists():
        s.home.mkdir(parents=True, exist_ok=True)
        made = {user: secrets.token_urlsafe(24) for user in wanted}
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # made by another `plylog up` at the same moment
        else:
            with os.fdopen(fd, "w") as out:
                json.dump(made, out, indent=1)
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SettingsError(f"cannot read the Kafka users' passwords in {path}: {error}") from None
    missing = [user for user in wanted if not known.get(user)]
    if missing:
        raise SettingsError(f"{path} has no password for {', '.join(missing)}: `plylog down --purge` makes new ones")
    return known


def user_auth(s: Settings, user: str) -> KafkaAuth:
    """The credentials of one Kafka user of the local cluster."""
    return KafkaAuth(user, passwords(s)[user], DEFAULT_MECHANISM)


def operator_auth(s: Settings) -> KafkaAuth:
    """The operator's credentials (a super user: topics and ACLs), used by `plylog up --cluster`."""
    return user_auth(s, kafka_acls.OPERATOR)


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
    ndir.chmod(0o700)  # its server.properties holds the broker's and the controller's passwords
    users = passwords(s, make=True)
    (s.logs_dir / node.name).mkdir(parents=True, exist_ok=True)
    server, log4j = ndir / "server.properties", ndir / "log4j2.properties"
    src = _kafka.deploy_dir()
    _kafka._render(
        src / "cluster-server.properties",
        server,
        {
            "NODE_ID": str(node.node_id),
            "BIND": "127.0.0.1",
            "HOST": "127.0.0.1",
            "VOTERS": voters(s),
            "KAFKA_PORT": str(node.port),
            "CONTROLLER_PORT": str(node.controller_port),
            "DATA_DIR": str(data),
            "BROKER_USER": kafka_acls.BROKER,
            "BROKER_PASSWORD": users[kafka_acls.BROKER],
            "CONTROLLER_USER": kafka_acls.CONTROLLER,
            "CONTROLLER_PASSWORD": users[kafka_acls.CONTROLLER],
            "SUPER_USERS": ";".join(f"User:{user}" for user in kafka_acls.SUPER_USERS),
        },
    )
    server.chmod(0o600)
    _kafka._render(src / "log4j2.properties", log4j, {"LOG_DIR": str(s.logs_dir / node.name)})
    formatted = ndir / "formatted.json"
    if (data / "meta.properties").is_file():
        info = json.loads(formatted.read_text()) if formatted.is_file() else {}
        if info.get("voters") not in (None, voters(s)):
            raise CliError(
                f"the Kafka data of {node.name} was formatted for the controllers {info['voters']}, not {voters(s)}",
                "use the ports it was made with, or `plylog down --purge` (all topics are lost)",
            )
        if info.get("auth") != AUTH:
            raise CliError(
                f"the Kafka data of {node.name} was formatted without its users (before authentication came)",
                "`plylog down --purge` and `plylog up --cluster` make a new cluster (all topics are lost)",
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
                *scram_arguments(users),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        ).returncode
    if rc != 0:
        raise CliError(
            f"formatting the storage of {node.name} failed (exit {rc})",
            f"read {log}; `plylog down --purge` wipes the local Kafka data",
            log=log,
        )
    formatted.write_text(
        json.dumps({"cluster_id": cid, "voters": voters(s), "kafka": _kafka.kafka_version(), "auth": AUTH})
    )
    return server


AUTH = "scram-users-v1"  # formatted.json's mark: the storage has the users of kafka_acls.SCRAM_USERS


def scram_arguments(users: dict[str, str]) -> list[str]:
    """kafka-storage format's `--add-scram` arguments: every SCRAM user into the first metadata."""
    args = []
    for user in kafka_acls.SCRAM_USERS:
        args += ["--add-scram", f"{DEFAULT_MECHANISM}=[name={user},password={users[user]}]"]
    return args


def use_reader_credentials(env: MutableMapping[str, str]) -> None:
    """A `plylog` command on the machine of a local cluster reads with the reader's credentials
    when the environment names no Kafka user (the services get their own from `plylog up`)."""
    if env.get("PLYLOG_KAFKA_USERNAME"):
        return
    home = Path(env["PLYLOG_HOME"]).expanduser() if env.get("PLYLOG_HOME") else None
    if home is None:
        from services.common.settings import default_home

        home = default_home()
    try:
        stack = json.loads((home / "stack.json").read_text())
        users = json.loads((home / USERS_FILE).read_text())
    except (OSError, ValueError):
        return
    reader = kafka_acls.SERVICE_USERS["reader"]
    if stack.get("cluster") and users.get(reader):
        env.update(KafkaAuth(reader, users[reader]).env())


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
    raise CliError(f"the JVM of {node.name} exited immediately", f"read {out}", log=out)
