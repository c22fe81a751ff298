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

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from services.common.settings import Settings, SettingsError

from . import _cluster_layout, _cluster_up, _kafka, _kafka_cluster, _redis, _redis_cluster
from ._proc import ProcRecord, StackError, describe_port_user, file_size, port_free, record_for, stop
from ._services import SERVICES, ServiceSpec

INFRA = ("redis", "kafka")  # the single-node stack's; a cluster's are kafka-N and redis-N
KAFKA_STOP_TIMEOUT = 60.0
REDIS_STOP_TIMEOUT = 10.0


def is_infra(name: str) -> bool:
    """Kafka or Redis (of the single-node stack or a cluster's node), not a plylog service."""
    return name in INFRA or _cluster_up.is_cluster_record(name)


out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def _say(msg: str) -> None:
    out.print(msg, soft_wrap=True)


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
        raise StackError(str(exc), "fix the environment variable or option") from None
    # The local stack always serves on loopback at the configured ports, whatever
    # KAFKA_BOOTSTRAP_SERVERS / REDIS_URL say (those point clients elsewhere).
    return dataclasses.replace(
        s, kafka_bootstrap=f"127.0.0.1:{s.kafka_port}", redis_url=f"redis://127.0.0.1:{s.redis_port}/0"
    )


# --------------------------------------------------------------------------- state
def _rel(p: Path | str) -> str:
    p = Path(p)
    with contextlib.suppress(ValueError):
        return str(p.relative_to(Path.cwd()))
    return str(p)


@contextlib.contextmanager
def _lock(s: Settings) -> Iterator[None]:
    s.home.mkdir(parents=True, exist_ok=True)
    with open(s.home / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"waiting for another plylog up/down on {_rel(s.home)} to finish ...")
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _load_records(s: Settings) -> dict[str, ProcRecord]:
    recs = {}
    if s.run_dir.is_dir():
        for f in sorted(s.run_dir.glob("*.json")):
            with contextlib.suppress(ValueError, OSError, TypeError):
                rec = ProcRecord.from_json(json.loads(f.read_text()))
                recs[rec.name] = rec
    return recs


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def _save_record(s: Settings, rec: ProcRecord) -> None:
    _atomic_write(s.run_dir / f"{rec.name}.json", json.dumps(rec.to_json(), indent=1))
    if rec.name != "redis":  # redis-server writes and removes its own pid file
        _atomic_write(s.run_dir / f"{rec.name}.pid", f"{rec.pid}\n")


def _drop_record(s: Settings, name: str) -> None:
    (s.run_dir / f"{name}.json").unlink(missing_ok=True)
    (s.run_dir / f"{name}.pid").unlink(missing_ok=True)
    (s.run_dir / f"{name}.ready").unlink(missing_ok=True)


def read_stack(home: Path) -> dict | None:
    """The stack description written by `plylog up` (None if absent/unreadable)."""
    with contextlib.suppress(ValueError, OSError):
        return json.loads((home / "stack.json").read_text())
    return None


def _write_stack(s: Settings, records: dict[str, ProcRecord], *, from_up: bool = False) -> None:
    """Rewrite stack.json from the live records (removed when nothing runs). Topic settings
    are those of the last `up`; addresses come from the process records."""
    live = {n: r for n, r in records.items() if r.alive()}
    path = s.stack_file
    if not live:
        path.unlink(missing_ok=True)
        return
    prev = read_stack(s.home) or {}
    cfg = prev.get("settings")
    if from_up or not cfg:
        cfg = {
            "kafka_port": s.kafka_port,
            "controller_port": s.controller_port,
            "redis_port": s.redis_port,
            "gateway_port": s.gateway_port,
            "topic_prefix": s.topic_prefix,
            "partitions": s.partitions,
            "retention_ms": s.retention_ms,
            "replication_factor": s.replication_factor,
        }
    brokers = sorted((r.address for n, r in live.items() if n.startswith("kafka-")), key=_port_of)
    redis_nodes = sorted((r.address for n, r in live.items() if n.startswith("redis-")), key=_port_of)
    doc = {
        "version": 1,
        "home": str(s.home),
        "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "settings": cfg,
        "cluster": bool(brokers or redis_nodes),
        "kafka_bootstrap": live["kafka"].address if "kafka" in live else (",".join(brokers) or None),
        "redis_url": f"redis://{live['redis'].address}/0"
        if "redis" in live
        else ("redis+cluster://" + ",".join(redis_nodes) if redis_nodes else None),
        "kafka_version": _safe(_kafka.kafka_version),
        "topics": {"prefix": cfg["topic_prefix"], "partitions": cfg["partitions"]},
        "components": {n: r.to_json() for n, r in live.items()},
    }
    _atomic_write(path, json.dumps(doc, indent=1))


def _safe(fn):
    with contextlib.suppress(Exception):
        return fn()
    return None


# --------------------------------------------------------------------------- up
class _Up:
    def __init__(
        self,
        s: Settings,
        *,
        infra_only: bool,
        rules_workers: int,
        timeout: float,
        write_started: Path | None,
        cluster: bool = False,
    ) -> None:
        self.s = s
        self.infra_only = infra_only
        self.cluster = cluster
        instances = _cluster_layout.SERVICE_INSTANCES if cluster else 1
        self.opts = {"rules_workers": rules_workers, "projectors": instances, "gateways": instances}
        self.timeout = timeout
        self.write_started = write_started
        self.records: dict[str, ProcRecord] = {}
        self.started: list[ProcRecord] = []
        self.children: dict[str, subprocess.Popen] = {}

    def line(self, name: str, what: str) -> None:
        _say(f"[bold]{name:<12}[/bold] {what}")

    def run(self) -> None:
        s = self.s
        for d in (s.home, s.logs_dir, s.run_dir):
            d.mkdir(parents=True, exist_ok=True)
        with _lock(s):
            self.records = _load_records(s)
            try:
                _cluster_up.refuse_mixed(self, self.cluster)
                if self.cluster:
                    _cluster_up.start_infra(self)
                else:
                    self.preflight()
                    self.redis()
                    self.kafka()
                    self.line(
                        "kafka",
                        "[yellow]open on loopback: no authentication, no ACLs (any process on this machine may "
                        "write any topic); `plylog up --cluster` turns them on, see docs/security/kafka.md[/yellow]",
                    )
                    self.follow_running_infra()
                self.topics()
                if not self.infra_only:
                    self.services()
            except BaseException as exc:
                if isinstance(exc, StackError):
                    exc.freeze_logs()
                self.rollback()
                raise
            finally:
                _write_stack(self.s, self.records, from_up=True)
                self.note_started()
        if self.started:
            _say(f"started: {', '.join(r.name for r in self.started)}")
        else:
            _say("nothing new started: everything requested was already running")
        _say(f"state and logs: {_rel(s.home)}/ (logs in {_rel(s.logs_dir)}/); stop with `plylog down`")

    def preflight(self) -> None:
        """Check for (and fetch) what is needed before starting anything, so a missing
        Java or Maven does not leave a half-started stack behind."""
        self.redis_binary = self.java = self.libs = None
        if self.existing("redis") is None:
            self.redis_binary = _redis.ensure_installed(echo=lambda m: self.line("redis", m))
        if self.existing("kafka") is None:
            self.java = _kafka.require_java()
            self.libs = _kafka.fetch_jars(echo=lambda m: self.line("kafka", m))

    def follow_running_infra(self) -> None:
        """Services must use the broker and Redis that actually run, even if they were
        started earlier with other ports than the ones configured now."""
        kafka, redis = self.records["kafka"].address, self.records["redis"].address
        kport, rport = _port_of(kafka), _port_of(redis)
        if (kport, rport) != (self.s.kafka_port, self.s.redis_port):
            _say(
                f"[yellow]note: the running stack uses Kafka {kafka} and Redis {redis}, not "
                f"the configured ports {self.s.kafka_port}/{self.s.redis_port}; its "
                "services will use the running ones (`plylog down` first to move)[/yellow]"
            )
            self.s = dataclasses.replace(
                self.s, kafka_port=kport, redis_port=rport, kafka_bootstrap=kafka, redis_url=f"redis://{redis}/0"
            )

    def note_started(self) -> None:
        if self.write_started is not None:
            names = [r.name for r in self.started if r.alive()]
            _atomic_write(self.write_started, "".join(n + "\n" for n in names))

    def rollback(self) -> None:
        if not self.started:
            return
        _say("[yellow]up failed: stopping what this run started[/yellow]")
        for rec in reversed(self.started):
            result = stop(rec, KAFKA_STOP_TIMEOUT if rec.name == "kafka" else 10)
            self.line(rec.name, result)
            _drop_record(self.s, rec.name)
            self.records.pop(rec.name, None)
        self.started.clear()

    def existing(self, name: str) -> ProcRecord | None:
        rec = self.records.get(name)
        if rec is None:
            return None
        if rec.alive():
            return rec
        self.line(name, f"[dim]stale pid file (pid {rec.pid} is gone); starting anew[/dim]")
        _drop_record(self.s, name)
        del self.records[name]
        return None

    def save(self, rec: ProcRecord) -> None:
        _save_record(self.s, rec)

    def keep(self, rec: ProcRecord, child: subprocess.Popen | None = None) -> None:
        self.records[rec.name] = rec
        self.started.append(rec)
        if child is not None:
            self.children[rec.name] = child
        _save_record(self.s, rec)

    def need_port(self, port: int, what: str, env: str) -> None:
        if not port_free(port):
            raise StackError(
                f"{describe_port_user(port)}; {what} cannot start there (not a process plylog started)",
                f"stop that process, or choose another port: {env}=<port> (or the matching --option)",
            )

    # -- redis
    def redis(self) -> None:
        s = self.s
        rec = self.existing("redis")
        if rec is not None:
            if not _redis.ping(_port_of(rec.address)):
                raise StackError(
                    f"our redis-server (pid {rec.pid}) does not answer PING",
                    "run `plylog down` and `plylog up` again",
                    log=Path(rec.log),
                )
            self.line("redis", f"already running (pid {rec.pid}, {rec.address})")
            return
        self.need_port(s.redis_port, "Redis", "PLYLOG_REDIS_PORT")
        t0 = time.monotonic()
        rec = _redis.start(s, self.redis_binary or _redis.ensure_installed())
        rec.ready_seconds = round(time.monotonic() - t0, 2)
        self.keep(rec)
        self.line("redis", f"[green]started[/green] (pid {rec.pid}, {rec.address}, ready in {rec.ready_seconds:.1f}s)")

    # -- kafka
    def kafka(self) -> None:
        s = self.s
        from services.common import kafka_admin

        rec = self.existing("kafka")
        if rec is not None:
            if kafka_admin.metadata_answers(rec.address, timeout=5) is None:
                raise StackError(
                    f"our Kafka broker (pid {rec.pid}) is running but does not answer "
                    f"metadata requests at {rec.address}",
                    "it may still be starting: wait and retry, or `plylog down` then `plylog up`",
                    log=Path(rec.log),
                )
            self.line("kafka", f"already running (pid {rec.pid}, {rec.address})")
            return
        java = self.java or _kafka.require_java()
        libs = self.libs or _kafka.fetch_jars(echo=lambda m: self.line("kafka", m))
        self.need_port(s.kafka_port, "the Kafka broker", "PLYLOG_KAFKA_PORT")
        self.need_port(s.controller_port, "the Kafka controller", "PLYLOG_KAFKA_CONTROLLER_PORT")
        server = _kafka.prepare(s, java, libs, echo=lambda m: self.line("kafka", m))
        since = {p: file_size(p) for p in (_kafka.kafka_log(s), _kafka.kafka_out(s))}
        t0 = time.monotonic()
        child, rec = _kafka.start(s, java, libs, server)
        self.keep(rec, child)
        self.line("kafka", f"starting broker (pid {rec.pid}) ...")
        deadline = time.monotonic() + self.timeout
        while True:
            if kafka_admin.metadata_answers(rec.address, timeout=2) is not None:
                break
            code = child.poll()
            if code is not None:
                raise StackError(
                    f"the Kafka broker exited while starting (exit code {code})",
                    f"read {_rel(_kafka.kafka_out(s))} and {_rel(_kafka.kafka_log(s))}",
                    log=_kafka.kafka_out(s),
                    extra_logs=(_kafka.kafka_log(s),),
                    since=since,
                )
            if time.monotonic() > deadline:
                raise StackError(
                    f"the Kafka broker did not answer a metadata request within {self.timeout:g}s",
                    "on a slow machine retry with a longer --timeout (PLYLOG_START_TIMEOUT); "
                    f"else read {_rel(_kafka.kafka_log(s))}",
                    log=_kafka.kafka_log(s),
                    extra_logs=(_kafka.kafka_out(s),),
                    since=since,
                )
            time.sleep(0.2)
        rec.ready_seconds = round(time.monotonic() - t0, 2)
        _save_record(s, rec)
        self.line(
            "kafka",
            f"[green]started[/green] (pid {rec.pid}, {rec.address}, Kafka "
            f"{_kafka.kafka_version()}, ready in {rec.ready_seconds:.1f}s)",
        )

    # -- topics
    def topics(self) -> None:
        from services.common import kafka_admin

        s = self.s
        bootstrap = s.kafka_bootstrap if self.cluster else self.records["kafka"].address
        auth = _kafka_cluster.operator_auth(s) if self.cluster else None
        try:
            status = kafka_admin.ensure_contract_topics(
                bootstrap,
                s.topic_prefix,
                s.partitions,
                s.retention_ms,
                timeout=60,
                replication=s.replication_factor,
                min_insync=s.min_insync_replicas,
                auth=auth,
            )
            counts = kafka_admin.partition_counts(bootstrap, s.topics.all(), auth=auth)
            if self.cluster:
                _cluster_up.ensure_acls(self, bootstrap)
        except kafka_admin.KafkaAdminError as exc:
            raise StackError(
                f"creating the contract topics failed: {exc}",
                f"read {_rel(_kafka.kafka_log(s))}",
                log=_kafka.kafka_log(s),
            ) from None
        created = [n for n, v in status.items() if v == "created"]
        asked = {n: 1 if n == s.topics.outcomes else s.partitions for n in s.topics.all()}
        # Just created on a cluster, a topic may not be in every broker's metadata yet: say what was asked.
        parts = ", ".join(f"{n} ({counts.get(n) or asked[n]})" for n in s.topics.all())
        self.line(
            "topics",
            f"{parts}, {s.replication_factor} replica(s): " + (f"created {len(created)}" if created else "all exist"),
        )
        for name in s.topics.all():
            want = 1 if name == s.topics.outcomes else s.partitions
            if counts.get(name) not in (None, want):
                self.line(
                    "topics",
                    f"[yellow]warning: {name} has {counts[name]} partitions, "
                    f"PLYLOG_PARTITIONS asks for {want}; left as is "
                    "(changing it would move matches between "
                    "partitions)[/yellow]",
                )

    # -- plylog's own services
    def services(self) -> None:
        for spec in SERVICES:
            ok, why = spec.available()
            if not ok:
                self.line(spec.name, f"[dim]skipped: {why}[/dim]")
                continue
            count = max(1, spec.instances(self.opts)) if spec.scalable else 1
            names = spec.instance_names(count)
            for i, name in enumerate(names, start=1):
                rec = self.existing(name)
                if rec is not None:
                    self.line(name, f"already running (pid {rec.pid}{', ' + rec.address if rec.address else ''})")
                    continue
                self.start_service(spec, name, i)
            if spec.scalable:
                extra = sorted(n for n, r in self.records.items() if spec.owns(n) and n not in names and r.alive())
                for n in extra:
                    self.line(n, "running (more instances than requested; `plylog down` stops it)")

    def start_service(self, spec: ServiceSpec, name: str, instance: int) -> None:
        s = self.s
        port = spec.port(s, instance)
        ops_port = spec.ops_port(s, instance)
        if port is not None:
            self.need_port(port, name, f"PLYLOG_{spec.name.upper()}_PORT")
        if ops_port is not None:
            self.need_port(ops_port, f"{name} (ops)", "PLYLOG_OPS_PORT_BASE")
        data_dir = s.run_dir / name
        data_dir.mkdir(parents=True, exist_ok=True)
        ready_file = s.run_dir / f"{name}.ready"
        ready_file.unlink(missing_ok=True)
        env = {
            **os.environ,
            **s.service_env(),
            **spec.env,
            "PLYLOG_SERVICE": spec.name,
            "PLYLOG_INSTANCE": str(instance),
            "PLYLOG_DATA_DIR": str(data_dir),
            "PLYLOG_READY_FILE": str(ready_file),
            "PYTHONUNBUFFERED": "1",
            **(_cluster_up.service_credentials(s, spec.name) if self.cluster else {}),
        }
        if port is not None:
            env[f"PLYLOG_{spec.name.upper()}_PORT"] = str(port)
        if ops_port is not None:
            env["PLYLOG_OPS_PORT"] = str(ops_port)
        argv = spec.argv(s, instance)
        log = s.logs_dir / f"{name}.log"
        self.since = {log: file_size(log)}
        with open(log, "ab") as fh:
            fh.write(f"\n=== plylog up: starting {name} at {time.ctime()}: {' '.join(argv)} ===\n".encode())
            fh.flush()
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                cwd=str(s.home),
                close_fds=True,
            )
        rec = record_for(
            name,
            child.pid,
            f"-m {spec.module}",
            log,
            address=f"127.0.0.1:{port}" if port else (f"127.0.0.1:{ops_port} (ops)" if ops_port else ""),
            argv=argv,
        )
        if rec is None:
            raise StackError(f"{name} exited immediately", f"read {_rel(log)}", log=log)
        self.keep(rec, child)
        t0 = time.monotonic()
        self.wait_ready(spec, name, child, rec, port, ready_file)
        rec.ready_seconds = round(time.monotonic() - t0, 2)
        _save_record(s, rec)
        self.line(
            name,
            f"[green]started[/green] (pid {rec.pid}"
            f"{', ' + rec.address if rec.address else ''}, ready in "
            f"{rec.ready_seconds:.1f}s)",
        )

    def wait_ready(
        self, spec: ServiceSpec, name: str, child: subprocess.Popen, rec: ProcRecord, port: int | None, ready_file: Path
    ) -> None:
        kind, _, arg = spec.ready.partition(":")
        deadline = time.monotonic() + spec.ready_timeout
        alive_for = float(arg or 3) if kind == "alive" else 0.0
        t0 = time.monotonic()
        log = Path(rec.log)
        while True:
            code = child.poll()
            if code is not None:
                raise StackError(
                    f"{name} exited while starting (exit code {code})", f"read {_rel(log)}", log=log, since=self.since
                )
            if kind == "alive" and time.monotonic() - t0 >= alive_for:
                return
            if kind == "file" and ready_file.exists():
                return
            if kind == "http" and port is not None and _http_answers(port, arg or "/"):
                return
            if time.monotonic() > deadline:
                raise StackError(
                    f"{name} did not become ready ({spec.ready}) within {spec.ready_timeout:g}s",
                    f"read {_rel(log)}",
                    log=log,
                    since=self.since,
                )
            time.sleep(0.2)


def _http_answers(port: int, path: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP answer means the server is up
    except OSError:
        return False


# --------------------------------------------------------------------------- down
def _port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def _neg_instance(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return -int(tail) if tail.isdigit() else 0


def _stop_order(records: dict[str, ProcRecord]) -> list[str]:
    """Services first (reverse start order, highest instance first), then Kafka, Redis."""
    rank = {spec.name: i for i, spec in enumerate(SERVICES)}

    def key(name: str):
        if is_infra(name):
            return (2 if name.startswith("kafka") else 3, 0, _neg_instance(name), name)
        base = name.rsplit("-", 1)[0] if _neg_instance(name) else name
        return (1, -rank.get(base, len(rank)), _neg_instance(name), name)

    return sorted(records, key=key)


def _down(s: Settings, only: set[str] | None, purge: bool) -> None:
    with _lock(s):
        records = _load_records(s)
        if only is not None:
            records = {n: r for n, r in records.items() if n in only or _instance_of_any(n, only)}
        if not records:
            _say(f"nothing to stop: no process started by plylog up is recorded in {_rel(s.run_dir)}/")
        order = _stop_order(records)
        brokers = [n for n in order if n.startswith("kafka-")]
        for name in order:
            if name in brokers[1:]:
                continue  # stopped together with the first broker
            names = brokers if name in brokers else [name]
            for stopped, result in _stop_together(s, {n: records[n] for n in names}):
                if not result.startswith("still running"):
                    _drop_record(s, stopped)
        remaining = _load_records(s)
        _write_stack(s, remaining)
        if purge:
            if any(r.alive() for r in remaining.values()):
                raise StackError(
                    "--purge refused: some components are still running", "run `plylog down --purge` without --only"
                )
            for sub in ("kafka", "redis", "run"):
                shutil.rmtree(s.home / sub, ignore_errors=True)
            for node in (*_cluster_layout.kafka_nodes(s), *_cluster_layout.redis_nodes(s)):
                shutil.rmtree(s.home / node.name, ignore_errors=True)
            (s.home / "kafka-cluster.id").unlink(missing_ok=True)
            _kafka_cluster.users_file(s).unlink(missing_ok=True)
            (s.home / "stack.json").unlink(missing_ok=True)
            _say(f"purged Kafka data and Redis files under {_rel(s.home)}/ (logs kept)")


def _instance_of_any(name: str, wanted: set[str]) -> bool:
    """`-c projector` also stops projector-1 and projector-2 (and `-c kafka` every broker)."""
    base, _, number = name.rpartition("-")
    return number.isdigit() and base in wanted


def _stop_together(s: Settings, records: dict[str, ProcRecord]) -> list[tuple[str, str]]:
    """SIGTERM each (brokers of a cluster all at once: the last one standing would wait for a
    controller quorum that is gone), wait, SIGKILL what is left. [(name, what happened)]."""
    from concurrent.futures import ThreadPoolExecutor

    def one(name: str) -> tuple[str, str]:
        rec = records[name]
        if not rec.alive():
            _say(f"[bold]{name:<12}[/bold] not running (stale pid file removed)")
            return name, "not running"
        result = stop(rec, _stop_timeout(name))
        _say(f"[bold]{name:<12}[/bold] {result} (pid {rec.pid})")
        return name, result

    with ThreadPoolExecutor(max_workers=max(1, len(records))) as pool:
        return list(pool.map(one, records))


def _stop_timeout(name: str) -> float:
    if name.startswith("kafka"):
        return KAFKA_STOP_TIMEOUT
    if name.startswith("redis"):
        return REDIS_STOP_TIMEOUT
    for spec in SERVICES:
        if spec.owns(name):
            return spec.stop_timeout
    return 15.0


# --------------------------------------------------------------------------- status
def _component_rows(s: Settings) -> list[dict]:
    from services.common import kafka_admin

    records = _load_records(s)
    stack = read_stack(s.home) or {}
    cfg = stack.get("settings") or {}
    rows = []

    def row(name, rec, default_addr, check):
        if rec is not None and rec.alive():
            healthy = check(rec) if check else True
            state = "running" if healthy else "not answering"
            rows.append(
                {
                    "component": name,
                    "state": state,
                    "pid": rec.pid,
                    "address": rec.address,
                    "log": rec.log,
                    "ready_seconds": rec.ready_seconds,
                }
            )
        else:
            rows.append(
                {
                    "component": name,
                    "state": "stopped",
                    "pid": None,
                    "address": default_addr,
                    "log": rec.log if rec else "",
                    "ready_seconds": None,
                }
            )

    nodes = sorted((n for n in records if _cluster_up.is_cluster_record(n)), key=lambda n: (n[0], -_neg_instance(n)))
    if nodes:  # a cluster: every node, Redis nodes with their role
        for name in nodes:
            rec = records[name]
            if name.startswith("redis-"):
                node = _redis_cluster.RedisNode(-_neg_instance(name), _port_of(rec.address))
                row(name, rec, "", lambda r, n=node: _redis_cluster.ping(n))
                if rows[-1]["state"] == "running":
                    rows[-1]["address"] += {"master": " (primary)", "slave": " (replica)"}.get(
                        _redis_cluster.role(node), ""
                    )
            else:
                row(name, rec, "", lambda r: kafka_admin.metadata_answers(r.address, timeout=3) is not None)
    else:
        row(
            "redis",
            records.get("redis"),
            f"127.0.0.1:{cfg.get('redis_port', s.redis_port)}",
            lambda r: _redis.ping(_port_of(r.address)),
        )
        row(
            "kafka",
            records.get("kafka"),
            f"127.0.0.1:{cfg.get('kafka_port', s.kafka_port)}",
            lambda r: kafka_admin.metadata_answers(r.address, timeout=3) is not None,
        )
    for spec in SERVICES:
        ok, why = spec.available()
        names = sorted((n for n in records if spec.owns(n)), key=lambda n: -_neg_instance(n))
        if not names:
            port = spec.port(s, 1)
            rows.append(
                {
                    "component": spec.name,
                    "state": "stopped" if ok else "not written yet",
                    "pid": None,
                    "address": f"127.0.0.1:{port}" if port else "",
                    "log": "",
                    "ready_seconds": None,
                    "note": "" if ok else why,
                }
            )
        for n in names:
            row(n, records[n], "", None)
    return rows


def _print_status(s: Settings, rows: list[dict]) -> None:
    stack = read_stack(s.home) or {}
    table = Table(title=f"plylog local stack — {_rel(s.home)}/", title_justify="left")
    for col in ("component", "state", "pid", "address", "log"):
        table.add_column(col, no_wrap=col in ("component", "state", "pid", "address"))
    colors = {"running": "green", "stopped": "red", "not answering": "yellow"}
    for r in rows:
        color = colors.get(r["state"], "dim")
        table.add_row(
            r["component"],
            f"[{color}]{r['state']}[/{color}]",
            str(r["pid"] or "-"),
            r["address"] or "-",
            _rel(r["log"]) if r["log"] else "-",
        )
    out.print(table)
    topics = stack.get("topics")
    if topics:
        _say(f"topics: prefix {topics['prefix']!r}, {topics['partitions']} partitions (outcomes: 1)")


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
            _say(f"[dim]note: {var}={os.environ[var]} is set; the local stack and its services use {local}[/dim]")
    workers = rules_workers or (_cluster_layout.SERVICE_INSTANCES if cluster else 1)
    _Up(
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
            raise StackError(
                f"cannot read {only_listed}: {exc.strerror}", "pass the file written by `plylog up --write-started`"
            ) from None
    if component:
        only = (only or set()) | set(component)
    _down(s, only, purge)


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
    rows = _component_rows(s)
    if as_json:
        print(json.dumps({"home": str(s.home), "components": rows}, indent=1))
    else:
        _print_status(s, rows)
    if check and not all(r["state"] == "running" for r in rows if is_infra(r["component"])):
        raise typer.Exit(1)


def setup(home: Path | None = HomeOpt) -> None:
    """Install what the local stack needs and is missing: the Kafka jars and its tools (Maven,
    once, into ${XDG_CACHE_HOME:-~/.cache}/plylog/) and redis-server (apt, as root).
    Checks Java 17+. Run by `make setup`."""
    java = _kafka.require_java()
    libs = _kafka.fetch_jars(echo=lambda m: _say("kafka: " + m))
    _say(f"kafka: Apache Kafka {_kafka.kafka_version()} jars in {libs} (java: {java})")
    tools = _kafka.fetch_tools(echo=lambda m: _say("kafka: " + m))
    _say(f"kafka: its command-line tools (the Java console consumer) in {tools}")
    redis = _redis.ensure_installed(echo=lambda m: _say("redis: " + m))
    _say(f"redis: {redis}")


def register(app: typer.Typer) -> None:
    """Add the stack commands to the `plylog` app."""
    app.command("up")(up)
    app.command("down")(down)
    app.command("status")(status)
    app.command("setup")(setup)
