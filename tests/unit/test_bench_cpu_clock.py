"""bench/cpu_clock.py: another process's CPU time, finer than the 10 ms clock tick."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.cpu_clock import CLOCK_TICKS, machine_busy_seconds, process_cpu_seconds

# Burns CPU in a thread that then exits, reports its own process CPU time, and waits to be read.
CHILD = """
import sys, threading, time
def burn():
    end = time.process_time() + 0.037
    while time.process_time() < end:
        pass
worker = threading.Thread(target=burn)
worker.start(); worker.join()
print(time.process_time(), flush=True)
sys.stdin.readline()
"""


def test_the_cpu_time_of_another_process_counts_exited_threads_to_the_millisecond():
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        own_reading = float(child.stdout.readline())
        read_from_outside = process_cpu_seconds(child.pid)
    finally:
        child.communicate("\n", timeout=30)
    assert own_reading >= 0.037
    # Clock ticks would be off by up to 10 ms; the process's CPU-time clock differs only by what
    # the child spent between its print and our read (a few hundred microseconds at most).
    assert own_reading <= read_from_outside < own_reading + 0.003


def test_the_machine_is_busy_with_what_is_not_idle_or_waiting_for_disk(tmp_path):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  1000 20 300 9000 400 5 6 7 0 0\ncpu0 500 10 150 4500 200 2 3 3 0 0\n")
    assert machine_busy_seconds(stat) == (1000 + 20 + 300 + 5 + 6 + 7) / CLOCK_TICKS


def test_the_machine_reading_grows_with_work_done_here():
    before = machine_busy_seconds()
    end = time.process_time() + 0.2
    while time.process_time() < end:
        pass
    assert machine_busy_seconds() - before >= 0.15  # ticks of 10 ms: what we burnt, give or take a tick or two
