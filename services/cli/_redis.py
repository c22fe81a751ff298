"""The local Redis: find (or, as root, install) redis-server, start it daemonized, PING it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from services.common.settings import Settings

from ._errors import CliError
from ._logs import tail
from ._proc import ProcRecord, proc_cmdline, proc_exe, record_for

APT_ENV = {"DEBIAN_FRONTEND": "noninteractive"}


def redis_log(s: Settings) -> Path:
    return s.logs_dir / "redis.log"


def _redis_pids() -> set[int]:
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            exe = proc_exe(int(entry.name)) or ""
            if "redis-server" in proc_cmdline(int(entry.name)).split(" ", 1)[0] or exe.endswith(
                ("/redis-server", "/redis-check-rdb")
            ):
                pids.add(int(entry.name))
    return pids


def ensure_installed(echo=print) -> str:
    """Path of redis-server; installs Debian's package when missing and we are root."""
    found = shutil.which("redis-server")
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise CliError(
            "redis-server is not installed (not on PATH)",
            "install it: `sudo apt-get install -y redis-server` (Debian/Ubuntu), or set "
            "REDIS_URL to a Redis you run yourself",
        )
    echo("redis-server not found; installing Debian's redis-server package ...")
    before = _redis_pids()
    log = Path("/tmp") / f"plylog-apt-{os.getpid()}.log"
    env = {**os.environ, **APT_ENV}
    with open(log, "w") as out:
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "redis-server"]):
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL).returncode
            if rc != 0:
                raise CliError(
                    f"`{' '.join(cmd)}` failed (exit {rc})", "install redis-server by hand, then retry", log=log
                )
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if not found:
        raise CliError("apt-get installed redis-server but it is not on PATH", "add /usr/bin to PATH", log=log)
    _stop_service_started_by_install(before, echo)
    log.unlink(missing_ok=True)
    echo("installed " + found)
    return found


def _stop_service_started_by_install(before: set[int], echo) -> None:
    """Debian's package starts a system redis on 6379 where services may start (no
    policy-rc.d). That daemon is not ours to keep: it would take our default port. We
    stop only a redis-server that was not running before the install."""
    time.sleep(0.5)
    new = _redis_pids() - before
    if not new:
        return
    echo(
        f"the package install started a system redis-server (pid "
        f"{', '.join(map(str, sorted(new)))}); stopping it so plylog can use its own"
    )
    for cmd in (["systemctl", "stop", "redis-server"], ["service", "redis-server", "stop"]):
        if shutil.which(cmd[0]):
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            if not (_redis_pids() & new):
                return
    for pid in new:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for _ in range(50):
        if not (_redis_pids() & new):
            return
        time.sleep(0.1)


def ping(port: int, host: str = "127.0.0.1", timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start(s: Settings, binary: str, timeout: float = 15.0) -> ProcRecord:
    rdir = s.home / "redis"
    rdir.mkdir(parents=True, exist_ok=True)
    s.run_dir.mkdir(parents=True, exist_ok=True)
    pidfile = s.run_dir / "redis.pid"
    pidfile.unlink(missing_ok=True)
    log = redis_log(s)
    argv = [
        binary,
        "--port",
        str(s.redis_port),
        "--bind",
        "127.0.0.1",
        "--protected-mode",
        "yes",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "yes",
        "--pidfile",
        str(pidfile),
        "--dir",
        str(rdir),
        "--logfile",
        str(log),
    ]
    r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise CliError(
            f"redis-server refused to start (exit {r.returncode}): {(r.stderr or r.stdout).strip()[:200]}",
            f"read {log}",
            log=log,
        )
    deadline = time.monotonic() + timeout
    pid = None
    while time.monotonic() < deadline:
        if pid is None and pidfile.is_file():
            try:
                pid = int(pidfile.read_text().strip())
            except ValueError:
                pid = None
        if pid is not None and ping(s.redis_port):
            rec = record_for("redis", pid, f":{s.redis_port}", log, address=f"127.0.0.1:{s.redis_port}", argv=argv)
            if rec is not None:
                return rec
        time.sleep(0.05)
    if pid is not None:  # started but not answering: don't leave it behind
        rec = record_for("redis", pid, f":{s.redis_port}", log)
        if rec is not None:
            from ._proc import stop

            stop(rec, 5)
    raise CliError(
        f"redis-server did not answer PING on port {s.redis_port} within {timeout:g}s", f"read {log}", log=log
    )


__all__ = ["ensure_installed", "ping", "redis_log", "start", "tail"]
