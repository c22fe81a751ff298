"""The processes a benchmark run starts itself: rules workers, the projector, the gateway, the raw
Kafka pass-through. Each scenario decides how many of which; each has its own log and data dir."""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .cpu_clock import process_cpu_seconds
from .stack import BenchStack, RunSpace

REPO = Path(__file__).resolve().parents[1]
PROJECTOR_CONSUMER = "projector"  # its offsets in Redis: `{p}offsets:projector`


def free_port() -> int:
    """A TCP port free on loopback now (a process started on it may still lose it to another)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServiceFailed(RuntimeError):
    """A service process exited or did not become ready; the message has its log's tail."""


_RUNNING: set[Service] = set()


@atexit.register
def _stop_leftovers() -> None:
    """A run that ends early (Ctrl-C, SIGTERM) must not leave services behind."""
    for service in list(_RUNNING):
        service.kill()


@dataclass(eq=False)
class Service:
    """One plylog service as a child process (`python -m <module>`) in a session of its own, for
    the benchmarks and the tests: a log per start in `dir`, its data in `dir/data/<name>` (kept
    across restarts), ready once it creates its ready file (PLYLOG_READY_FILE) or, with
    `ready_url`, once that URL answers 200."""

    name: str
    module: str
    args: tuple[str, ...]
    env: dict[str, str]
    dir: Path
    ready_url: str | None = None
    popen: subprocess.Popen | None = None
    logs: list[Path] = field(default_factory=list)  # one per start, the current one last

    @property
    def starts(self) -> int:
        return len(self.logs)

    @property
    def log(self) -> Path:
        return self.logs[-1]

    @property
    def ready_file(self) -> Path:
        return self.dir / f"{self.name}.ready"

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def start(self) -> Service:
        self.logs.append(self.dir / f"{self.name}.{self.starts + 1}.log")
        self.ready_file.unlink(missing_ok=True)
        data_dir = self.dir / "data" / self.name
        data_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PLYLOG_HOME": str(self.dir),
            **self.env,
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
            "PLYLOG_DATA_DIR": str(data_dir),
            "PLYLOG_READY_FILE": str(self.ready_file),
        }
        with open(self.log, "wb") as log:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", self.module, *self.args],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _RUNNING.add(self)
        return self

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not self._ready():
            if not self.alive:
                raise ServiceFailed(
                    f"{self.name} exited while starting (exit code {self.popen.returncode}); "
                    f"last lines of {self.log}:\n{self.tail()}"
                )
            if time.monotonic() > deadline:
                raise ServiceFailed(
                    f"{self.name} was not ready after {timeout:g}s; last lines of {self.log}:\n{self.tail()}"
                )
            time.sleep(0.05)

    def _ready(self) -> bool:
        if self.ready_url is None:
            return self.ready_file.exists()
        try:
            with urllib.request.urlopen(self.ready_url, timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def wait_for_log(self, fragment: str, timeout: float = 60.0) -> None:
        """Wait until the current start's log contains `fragment`."""
        deadline = time.monotonic() + timeout
        while fragment not in self.log.read_text(errors="replace"):
            if not self.alive:
                raise ServiceFailed(f"{self.name} exited (exit code {self.popen.returncode}):\n{self.tail()}")
            if time.monotonic() > deadline:
                raise ServiceFailed(f"{self.name}: no {fragment!r} in its log after {timeout:g}s:\n{self.tail()}")
            time.sleep(0.2)

    def check_alive(self) -> None:
        if self.popen is not None and not self.alive:
            raise ServiceFailed(
                f"{self.name} exited during the run (exit code {self.popen.returncode}); "
                f"last lines of {self.log}:\n{self.tail()}"
            )

    def rss_bytes(self) -> int:
        """Resident set size now (VmRSS of /proc/<pid>/status)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise ServiceFailed(f"{self.name}: no VmRSS in /proc/{self.pid}/status")

    def cpu_seconds(self) -> float:
        """User + system CPU time used so far, all threads, to the nanosecond."""
        return process_cpu_seconds(self.pid)

    def pause(self) -> None:
        """SIGSTOP the whole process group (a GC or VM pause, a frozen host); `resume` ends it."""
        if self.alive:
            os.killpg(self.popen.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.alive:
            os.killpg(self.popen.pid, signal.SIGCONT)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (SIGKILL: a crash) and wait for the service to end."""
        if self.alive:
            os.killpg(self.popen.pid, sig)
            self.popen.wait(timeout=30)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, then SIGKILL if it has not ended after `timeout` seconds."""
        if not self.alive:
            return
        os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def log_text(self) -> str:
        """The logs of every start, in order."""
        return "\n".join(path.read_text(errors="replace") for path in self.logs if path.exists())

    def tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the current log, after its first traceback when that is further
        up: a crash's cause comes before the shutdown noise that fills the end of the log."""
        if not self.logs or not self.log.exists():
            return "(no log)"
        text = self.log.read_text(errors="replace").splitlines()
        first = next((n for n, line in enumerate(text) if line.startswith("Traceback")), len(text))
        if first >= len(text) - lines:
            return "\n".join(text[-lines:])
        cause = text[max(0, first - 1) : min(first + lines, len(text) - lines)]
        return "\n".join([*cause, "[...]", *text[-lines:]])


def service_env(stack: BenchStack, space: RunSpace) -> dict[str, str]:
    return {
        "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap,
        "REDIS_URL": stack.redis_url,
        "PLYLOG_TOPIC_PREFIX": space.topics.prefix,
        "PLYLOG_REDIS_PREFIX": space.redis_prefix,
        "PLYLOG_PARTITIONS": str(stack.partitions),
        "PLYLOG_HOME": str(space.dir),
        "PLYLOG_REPLICATION_FACTOR": str(stack.replication),
        "PLYLOG_MIN_INSYNC_REPLICAS": str(stack.min_insync),
    }


def rules_worker(stack: BenchStack, space: RunSpace, number: int = 1, standbys: int | None = None) -> Service:
    name = f"rules-{number}"
    env = {**service_env(stack, space), "PLYLOG_SERVICE": "rules", "PLYLOG_INSTANCE": str(number)}
    if standbys is not None:
        env["PLYLOG_RULES_STANDBY_REPLICAS"] = str(standbys)
    return Service(name, "services.rules", ("--name", name), env, space.dir)


def projector(stack: BenchStack, space: RunSpace) -> Service:
    env = {**service_env(stack, space), "PLYLOG_SERVICE": "projector", "PLYLOG_INSTANCE": "1"}
    return Service("projector", "services.projector", ("--consumer", PROJECTOR_CONSUMER), env, space.dir)


def gateway(stack: BenchStack, space: RunSpace) -> Service:
    """The HTTP gateway on a free port, without its rate limits, live-stream cap and timekeeper (the
    bots play untimed matches as fast as they can; the limiter is not what is measured). The bots create
    matches as a platform's server does, with the operator key (`env["PLYLOG_OPERATOR_KEY"]`)."""
    port = free_port()
    env = {
        **service_env(stack, space),
        "PLYLOG_SERVICE": "gateway",
        "PLYLOG_INSTANCE": "1",
        "PLYLOG_GATEWAY_PORT": str(port),
        "PLYLOG_GATEWAY_HOST": "127.0.0.1",
        "PLYLOG_SECRET": secrets.token_hex(16),
        "PLYLOG_OPERATOR_KEY": secrets.token_hex(16),
        "PLYLOG_ADDRESS_RATE_PER_S": "1000000",
        "PLYLOG_ADDRESS_RATE_BURST": "1000000",
        "PLYLOG_RATE_PER_S": "1000000",
        "PLYLOG_RATE_BURST": "1000000",
        "PLYLOG_TIMEKEEPER_INTERVAL_S": "0",
        "PLYLOG_STREAMS_PER_CLIENT": "100000",
    }  # the seat-socket clients all come from 127.0.0.1
    return Service(
        "gateway",
        "services.gateway",
        ("--log-level", "warning"),
        env,
        space.dir,
        ready_url=f"http://127.0.0.1:{port}/healthz",
    )


def passthrough(stack: BenchStack, space: RunSpace) -> Service:
    """The raw Kafka baseline: moves -> results, bytes untouched (bench/passthrough.py)."""
    args = (
        "--source",
        space.topics.moves,
        "--target",
        space.topics.results,
        "--group",
        f"{space.topics.prefix}passthrough",
    )
    return Service("passthrough", "bench.passthrough", args, service_env(stack, space), space.dir)


def notifier_with_platform_webhook(stack: BenchStack, space: RunSpace, url: str) -> Service:
    """The notifier, with one platform webhook (every player's notifications) at `url`, written
    straight into the run's Redis keys (PLYLOG_BENCH_DEAD_ENDPOINT: the latency scenario with an
    endpoint that never answers, docs/notifications.md)."""
    import orjson

    from services.common import redis_client
    from services.common.notify_store import PLATFORM, endpoints_key

    endpoint = {"id": "we-bench", "channel": "webhook", "url": url, "secret": "whsec_bench", "created_at": "-"}
    client = redis_client.connect(stack.redis_url)
    try:
        client.hset(endpoints_key(space.redis_prefix, PLATFORM), endpoint["id"], orjson.dumps(endpoint))
    finally:
        client.close()
    env = {**service_env(stack, space), "PLYLOG_NOTIFY_ALLOW_PRIVATE": "1"}
    return Service("notifier", "services.notifier", (), env, space.dir)


def floor_hops(stack: BenchStack, space: RunSpace, relay: str = "relay") -> list[Service]:
    """The design's hops with no work at them (bench/hops.py): moves -> results -> Redis; `relay`
    "faust-relay" forwards through a Faust agent instead of librdkafka."""
    env, partitions = service_env(stack, space), str(stack.partitions)
    return [
        Service(
            relay,
            "bench.hops",
            (relay, "--source", space.topics.moves, "--target", space.topics.results, "--partitions", partitions),
            env,
            space.dir,
        ),
        Service(
            "publish",
            "bench.hops",
            (
                "publish",
                "--source",
                space.topics.results,
                "--partitions",
                partitions,
                "--redis-prefix",
                space.redis_prefix,
            ),
            env,
            space.dir,
        ),
    ]


class Services:
    """Start several services together, wait for all, stop all (in reverse) however the run ends.
    With `profile` (a path prefix), py-spy samples each of them from ready to stop and writes a
    flame graph `<profile>-<name>.svg`."""

    def __init__(self, *services: Service, profile: Path | None = None):
        self.services = list(services)
        self.profile = profile
        self.spies: list[subprocess.Popen] = []

    def __enter__(self) -> Services:
        try:
            for service in self.services:
                service.start()
            for service in self.services:
                service.wait_ready()
            if self.profile is not None:
                self.spies = [_py_spy(service, Path(f"{self.profile}-{service.name}.svg")) for service in self.services]
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_) -> None:
        self.stop()

    def stop(self) -> None:
        for spy in self.spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        for spy in self.spies:
            try:
                spy.wait(60)
            except subprocess.TimeoutExpired:
                spy.kill()
        self.spies = []
        for service in reversed(self.services):
            service.stop()

    def check_alive(self) -> None:
        for service in self.services:
            service.check_alive()

    def cpu_seconds(self) -> dict[str, float]:
        return {service.name: service.cpu_seconds() for service in self.services}


def py_spy_command() -> str | None:
    """The py-spy executable (beside this Python, or on PATH), or None."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def _py_spy(service: Service, svg: Path) -> subprocess.Popen:
    command = py_spy_command()
    if command is None:
        raise ServiceFailed("py-spy is not installed (pip install py-spy)")
    svg.parent.mkdir(parents=True, exist_ok=True)
    with open(service.dir / f"{service.name}.py-spy.log", "ab") as log:
        return subprocess.Popen(
            [command, "record", "--pid", str(service.pid), "--rate", "100", "--nonblocking", "--output", str(svg)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
