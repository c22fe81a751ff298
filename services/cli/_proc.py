"""Process and port utilities for the local stack (Linux /proc based, standard library only).

A process we start is remembered by pid *and* identity (its kernel start time, executable
and a marker expected in its command line), so a recycled pid is never mistaken for ours
and never killed.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path


def proc_starttime(pid: int) -> int | None:
    """Kernel start time of `pid` in clock ticks since boot (field 22 of /proc/pid/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = stat.rsplit(")", 1)[1].split()
    try:
        if rest[0] == "Z":  # zombie: as good as dead
            return None
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def proc_exe(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def proc_cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


@dataclass
class ProcRecord:
    """What we remember about a process we started (stored as run/<name>.json)."""

    name: str
    pid: int
    starttime: int
    exe: str
    match: str  # substring that must appear in its command line
    log: str
    address: str = ""
    argv: list[str] | None = None
    started_at: float = 0.0
    ready_seconds: float | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ProcRecord:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    def alive(self) -> bool:
        """True only if `pid` is still the very process we started."""
        if proc_starttime(self.pid) != self.starttime:
            return False
        exe = proc_exe(self.pid)
        if exe is not None and self.exe and exe != self.exe:
            return False
        return self.match in proc_cmdline(self.pid)


def record_for(
    name: str, pid: int, match: str, log: Path, address: str = "", argv: list[str] | None = None
) -> ProcRecord | None:
    st = proc_starttime(pid)
    if st is None:
        return None
    return ProcRecord(
        name=name,
        pid=pid,
        starttime=st,
        exe=proc_exe(pid) or "",
        match=match,
        log=str(log),
        address=address,
        argv=argv,
        started_at=time.time(),
    )


def _signal(rec: ProcRecord, sig: int) -> None:
    """Signal the process (its whole group if it leads one: we start services in their own
    session so their children go too). Only after checking it is still ours."""
    if not rec.alive():
        return
    try:
        if os.getpgid(rec.pid) == rec.pid:
            os.killpg(rec.pid, sig)
        else:
            os.kill(rec.pid, sig)
    except ProcessLookupError:
        pass


def stop(rec: ProcRecord, timeout: float) -> str:
    """SIGTERM, wait up to `timeout`, then SIGKILL. Returns what happened."""
    if not rec.alive():
        return "not running"
    _signal(rec, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(rec.pid)
        if not rec.alive():
            return "stopped"
        time.sleep(0.1)
    _signal(rec, signal.SIGKILL)
    for _ in range(50):
        _reap(rec.pid)
        if not rec.alive():
            return f"killed (no exit {timeout:g}s after SIGTERM)"
        time.sleep(0.1)
    return "still running after SIGKILL"


def _reap(pid: int) -> None:
    """Collect the exit status if `pid` is our own child (else it would linger as a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    except OSError:
        pass


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def listener_of(port: int) -> tuple[int, str] | None:
    """(pid, command) of the process listening on TCP `port`, if /proc tells."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(cols[9])
    if not inodes:
        return None
    targets = {f"socket:[{i}]" for i in inodes}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in targets:
                    pid = int(entry.name)
                    return pid, proc_cmdline(pid) or "?"
        except OSError:
            continue
    return None


def describe_port_user(port: int) -> str:
    who = listener_of(port)
    if who is None:
        return f"port {port} is in use"
    pid, cmd = who
    return f"port {port} is in use by pid {pid} ({cmd[:80]})"
