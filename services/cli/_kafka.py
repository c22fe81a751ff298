"""The local Kafka broker: fetch the Apache jars with Maven, render config, format, start.

Layout:
  ${XDG_CACHE_HOME:-~/.cache}/plylog/kafka-<version>/libs/*.jar   (fetched once, shared)
  $PLYLOG_HOME/kafka/server.properties, log4j2.properties         (rendered from deploy/kafka)
  $PLYLOG_HOME/kafka/cluster.id, formatted.json                   (format once)
  $PLYLOG_HOME/kafka/data/                                        (log.dirs)
  $PLYLOG_HOME/logs/kafka.log (log4j2), kafka.out (JVM stdout/stderr)
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

from services.common.settings import Settings, cache_dir, repo_root

from ._errors import CliError
from ._proc import ProcRecord, record_for

JVM_FLAGS = [
    "-Xms512m",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]
MIN_JAVA = 17


def deploy_dir() -> Path:
    root = repo_root()
    if root is None or not (root / "deploy" / "kafka" / "pom.xml").is_file():
        raise CliError(
            "deploy/kafka/pom.xml not found: the local stack runs from a source checkout",
            "run plylog from the repository (pip install -e .), or use deploy/compose with Docker",
        )
    return root / "deploy" / "kafka"


def pom_versions() -> dict[str, str]:
    pom = deploy_dir() / "pom.xml"
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    props = ET.parse(pom).getroot().find("m:properties", ns)
    out = {}
    for child in list(props) if props is not None else []:
        out[child.tag.split("}", 1)[-1]] = (child.text or "").strip()
    if "kafka.version" not in out:
        raise CliError(f"{pom} has no <kafka.version> property", "restore deploy/kafka/pom.xml")
    return out


def kafka_version() -> str:
    return pom_versions()["kafka.version"]


def libs_dir(env=None) -> Path:
    return cache_dir(env) / f"kafka-{kafka_version()}" / "libs"


def tools_dir(env=None) -> Path:
    """The Kafka command-line tools' jars (the Java console consumer ...), beside the broker's."""
    return cache_dir(env) / f"kafka-{kafka_version()}" / "tools"


def _pom_digest(pom: str = "pom.xml") -> str:
    return hashlib.sha256((deploy_dir() / pom).read_bytes()).hexdigest()


def require_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise CliError(
            "Java is not installed (no `java` on PATH); Kafka needs Java 17+",
            "install it, e.g. `apt-get install -y openjdk-17-jre-headless`",
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CliError(f"`java -version` failed: {exc}", "check your Java installation") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m:
        major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
        if major < MIN_JAVA:
            raise CliError(
                f"Java {major} found at {java}; Kafka 4 needs Java {MIN_JAVA}+",
                "install openjdk-17-jre-headless (or newer) and put it first on PATH",
            )
    return java


def fetch_jars(echo=print) -> Path:
    """Download the broker jars once (Maven), into the cache. Returns the libs dir."""
    return _fetch("pom.xml", libs_dir(), "complete.json", "jars", echo)


def fetch_tools(echo=print) -> Path:
    """Download the Kafka tools' jars once (the Java console consumer integrators use; tests too)."""
    return _fetch("tools-pom.xml", tools_dir(), "tools-complete.json", "tools jars", echo)


def _fetch(pom: str, libs: Path, stamp_name: str, what: str, echo) -> Path:
    stamp = libs.parent / stamp_name
    digest = _pom_digest(pom)
    if libs.is_dir() and stamp.is_file():
        with contextlib.suppress(ValueError, OSError):
            if json.loads(stamp.read_text()).get("pom_sha256") == digest:
                return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise CliError(
            "Maven is not installed (no `mvn` on PATH); it fetches the Kafka jars",
            "install it, e.g. `apt-get install -y maven`",
        )
    libs.parent.mkdir(parents=True, exist_ok=True)
    with open(libs.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another `plylog up` may be fetching right now
        if libs.is_dir() and stamp.is_file():
            with contextlib.suppress(ValueError, OSError):
                if json.loads(stamp.read_text()).get("pom_sha256") == digest:
                    return libs
        tmp = libs.parent / f"{libs.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        log = libs.parent / f"mvn-{libs.name}.log"
        echo(f"fetching Apache Kafka {kafka_version()} {what} with Maven into {libs} (once) ...")
        t0 = time.monotonic()
        with open(log, "w") as out:
            rc = subprocess.run(
                [
                    mvn,
                    "-B",
                    "-q",
                    "-f",
                    str(deploy_dir() / pom),
                    "dependency:copy-dependencies",
                    "-DincludeScope=runtime",
                    f"-DoutputDirectory={tmp}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            ).returncode
        if rc != 0 or not any(tmp.glob("kafka*.jar")):
            shutil.rmtree(tmp, ignore_errors=True)
            raise CliError(
                f"Maven could not fetch the Kafka jars (exit {rc})",
                "check network access to Maven Central and ~/.m2/settings.xml, then retry",
                log=log,
            )
        shutil.rmtree(libs, ignore_errors=True)
        tmp.rename(libs)
        stamp.write_text(
            json.dumps({"pom_sha256": digest, "kafka": kafka_version(), "seconds": round(time.monotonic() - t0, 1)})
        )
        echo(f"{what} fetched in {time.monotonic() - t0:.1f}s")
    return libs


def _render(template: Path, dest: Path, values: dict[str, str]) -> None:
    text = template.read_text()
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", value)
    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    left = re.findall(r"@@[A-Z_]+@@", body)
    if left:
        raise CliError(f"{template} has unknown placeholders {sorted(set(left))}", "fix the template in deploy/kafka/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(dest)


def kafka_dir(s: Settings) -> Path:
    return s.home / "kafka"


def kafka_log(s: Settings) -> Path:
    return s.logs_dir / "kafka.log"


def kafka_out(s: Settings) -> Path:
    return s.logs_dir / "kafka.out"


def new_cluster_id() -> str:
    """Same shape as `kafka-storage random-uuid`: a URL-safe base64 UUID, 22 chars."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def prepare(s: Settings, java: str, libs: Path, echo=print) -> Path:
    """Render the config and format the storage once. Returns the server.properties path."""
    kdir = kafka_dir(s)
    data = kdir / "data"
    s.logs_dir.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    server = kdir / "server.properties"
    log4j = kdir / "log4j2.properties"
    src = deploy_dir()
    _render(
        src / "server.properties",
        server,
        {"KAFKA_PORT": str(s.kafka_port), "CONTROLLER_PORT": str(s.controller_port), "DATA_DIR": str(data)},
    )
    _render(src / "log4j2.properties", log4j, {"LOG_DIR": str(s.logs_dir)})

    formatted = kdir / "formatted.json"
    if (data / "meta.properties").is_file():
        info = {}
        with contextlib.suppress(ValueError, OSError):
            info = json.loads(formatted.read_text())
        fmt_port = info.get("controller_port")
        if fmt_port is not None and fmt_port != s.controller_port:
            raise CliError(
                f"the Kafka data in {data} was formatted for controller port {fmt_port}, not {s.controller_port}",
                f"use PLYLOG_KAFKA_CONTROLLER_PORT={fmt_port}, or wipe the local data with "
                "`plylog down --purge` (all topics are lost)",
            )
        return server

    cid_file = kdir / "cluster.id"
    cid = cid_file.read_text().strip() if cid_file.is_file() else ""
    if not cid:
        cid = new_cluster_id()
        cid_file.write_text(cid + "\n")
    log = s.logs_dir / "kafka-format.log"
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
                "--standalone",
                "--ignore-formatted",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        ).returncode
    if rc != 0:
        raise CliError(
            f"formatting the Kafka storage failed (exit {rc})",
            f"read {log}; `plylog down --purge` wipes the local Kafka data",
            log=log,
        )
    formatted.write_text(
        json.dumps({"cluster_id": cid, "controller_port": s.controller_port, "kafka": kafka_version()})
    )
    return server


def marker(s: Settings) -> str:
    """A flag on the broker's command line that tells our broker from any other JVM."""
    return f"-Dplylog.home={s.home}"


def start(s: Settings, java: str, libs: Path, server: Path) -> tuple[subprocess.Popen, ProcRecord]:
    log4j = kafka_dir(s) / "log4j2.properties"
    argv = [
        java,
        *JVM_FLAGS,
        marker(s),
        f"-Dkafka.logs.dir={s.logs_dir}",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        f"{libs}/*",
        "kafka.Kafka",
        str(server),
    ]
    out = kafka_out(s)
    with open(out, "ab") as fh:
        fh.write(f"\n=== plylog up: starting broker at {time.ctime()} ===\n".encode())
        fh.flush()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=str(kafka_dir(s)),
            close_fds=True,
        )
    rec = None
    for _ in range(50):  # /proc entry appears at once; guard against an instant exit
        rec = record_for("kafka", proc.pid, marker(s), kafka_log(s), address=f"127.0.0.1:{s.kafka_port}", argv=argv)
        if rec is not None:
            break
        time.sleep(0.02)
    if rec is None:
        raise CliError("the Kafka JVM exited immediately", f"read {out}", log=out)
    return proc, rec


if __name__ == "__main__":  # pragma: no cover - debugging aid
    print(fetch_jars(), file=sys.stderr)
