"""The CPU time another process has used, to the nanosecond.

/proc/<pid>/stat counts it in clock ticks (10 ms): a smoke run whose pass-through used a few ms
read as 0.0 CPU per record in CI. The process's own CPU-time clock (clock_getcpuclockid) counts
every thread, exited ones too, in nanoseconds; /proc stays the fallback where the call fails.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid`, all its threads."""
    clock, spec = ctypes.c_int(), _Timespec()
    if _libc.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0 and _libc.clock_gettime(clock, ctypes.byref(spec)) == 0:
        return spec.tv_sec + spec.tv_nsec / 1e9
    return _ticks_cpu_seconds(pid)


def _ticks_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user, nice, system, irq, softirq, steal (not idle, not iowait)


def machine_busy_seconds(stat: Path = Path("/proc/stat")) -> float:
    """CPU seconds every core of the machine has spent busy since boot, whoever used them (the
    services under test, Kafka, Redis, the load's clients, anything else): /proc/stat's first line."""
    fields = stat.read_text().split("\n", 1)[0].split()[1:]
    return sum(int(fields[i]) for i in BUSY_FIELDS if i < len(fields)) / CLOCK_TICKS
