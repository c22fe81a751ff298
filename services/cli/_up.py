"""`plylog up`: start what is not running yet (Redis and Kafka, or the cluster's nodes), the contract
topics, then plylog's services, each waited for until ready; on failure, stop what this run started."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from . import _cluster_up, _kafka, _kafka_cluster, _redis
from ._console import rel, say
from ._errors import CliError
from ._launch import Launch
from ._logs import file_size
from ._proc import ProcRecord, record_for
from ._services import SERVICES, ServiceSpec
from ._state import load_records, lock, port_of, save_record, write_stack


class Up(Launch):
    def run(self) -> None:
        s = self.s
        for d in (s.home, s.logs_dir, s.run_dir):
            d.mkdir(parents=True, exist_ok=True)
        with lock(s):
            self.records = load_records(s)
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
                if isinstance(exc, CliError):
                    exc.freeze_logs()
                self.rollback()
                raise
            finally:
                write_stack(self.s, self.records, from_up=True)
                self.note_started()
        if self.started:
            say(f"started: {', '.join(r.name for r in self.started)}")
        else:
            say("nothing new started: everything requested was already running")
        say(f"state and logs: {rel(s.home)}/ (logs in {rel(s.logs_dir)}/); stop with `plylog down`")

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
        kport, rport = port_of(kafka), port_of(redis)
        if (kport, rport) != (self.s.kafka_port, self.s.redis_port):
            say(
                f"[yellow]note: the running stack uses Kafka {kafka} and Redis {redis}, not "
                f"the configured ports {self.s.kafka_port}/{self.s.redis_port}; its "
                "services will use the running ones (`plylog down` first to move)[/yellow]"
            )
            self.s = dataclasses.replace(
                self.s, kafka_port=kport, redis_port=rport, kafka_bootstrap=kafka, redis_url=f"redis://{redis}/0"
            )

    # -- redis
    def redis(self) -> None:
        s = self.s
        rec = self.existing("redis")
        if rec is not None:
            if not _redis.ping(port_of(rec.address)):
                raise CliError(
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
                raise CliError(
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
                raise CliError(
                    f"the Kafka broker exited while starting (exit code {code})",
                    f"read {rel(_kafka.kafka_out(s))} and {rel(_kafka.kafka_log(s))}",
                    log=_kafka.kafka_out(s),
                    extra_logs=(_kafka.kafka_log(s),),
                    since=since,
                )
            if time.monotonic() > deadline:
                raise CliError(
                    f"the Kafka broker did not answer a metadata request within {self.timeout:g}s",
                    "on a slow machine retry with a longer --timeout (PLYLOG_START_TIMEOUT); "
                    f"else read {rel(_kafka.kafka_log(s))}",
                    log=_kafka.kafka_log(s),
                    extra_logs=(_kafka.kafka_out(s),),
                    since=since,
                )
            time.sleep(0.2)
        rec.ready_seconds = round(time.monotonic() - t0, 2)
        save_record(s, rec)
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
            raise CliError(
                f"creating the contract topics failed: {exc}",
                f"read {rel(_kafka.kafka_log(s))}",
                log=_kafka.kafka_log(s),
            ) from None
        created = [n for n, v in status.items() if v == "created"]
        asked = {n: 1 if n in s.topics.single_partition() else s.partitions for n in s.topics.all()}
        # Just created on a cluster, a topic may not be in every broker's metadata yet: say what was asked.
        parts = ", ".join(f"{n} ({counts.get(n) or asked[n]})" for n in s.topics.all())
        parts += ", " + ", ".join(f"{n} (1, compacted: personal data)" for n in s.topics.personal())
        self.line(
            "topics",
            f"{parts}, {s.replication_factor} replica(s): " + (f"created {len(created)}" if created else "all exist"),
        )
        for name in s.topics.all():
            want = 1 if name in s.topics.single_partition() else s.partitions
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
            raise CliError(f"{name} exited immediately", f"read {rel(log)}", log=log)
        self.keep(rec, child)
        t0 = time.monotonic()
        self.wait_ready(spec, name, child, rec, port, ready_file)
        rec.ready_seconds = round(time.monotonic() - t0, 2)
        save_record(s, rec)
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
                raise CliError(
                    f"{name} exited while starting (exit code {code})", f"read {rel(log)}", log=log, since=self.since
                )
            if kind == "alive" and time.monotonic() - t0 >= alive_for:
                return
            if kind == "file" and ready_file.exists():
                return
            if kind == "http" and port is not None and _http_answers(port, arg or "/"):
                return
            if time.monotonic() > deadline:
                raise CliError(
                    f"{name} did not become ready ({spec.ready}) within {spec.ready_timeout:g}s",
                    f"read {rel(log)}",
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
