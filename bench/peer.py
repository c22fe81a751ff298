"""The peer: boardgame.io 0.50.2 playing Strands (bench/boardgameio/, docs/decisions/peer-harness.md),
run in the same invocation as plylog's scenarios so that every comparison is a ratio taken on the
same machine at the same moment.

The harness is copied from its source (`$PLYLOG_BENCH_PEER_SOURCE`, default bench/boardgameio/ in
this repository) to `<cache>/boardgameio`, again whenever a source file changes, so that its
node_modules never land in the work tree; `npm ci` runs there once per package-lock.json. Each
measurement is a fresh `node server.js` on a free port, a warm-up load (not measured), then the
measured `node load.js`, whose one JSON line is parsed here; the server is stopped by its PID
however the run ends.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .scenarios import Context, RunResult

SOURCE_ENV = "PLYLOG_BENCH_PEER_SOURCE"
DEFAULT_SOURCE = Path(__file__).with_name("boardgameio")
NOT_COPIED = {"node_modules", "results"}
MIN_NODE = 18  # load.js uses AbortSignal.timeout
SOURCE_STAMP = ".plylog-source"  # digest of the source files the copy was made of
LOCK_STAMP = ".plylog-lock"  # in node_modules/: digest of the package-lock.json `npm ci` installed
LOAD_TIMEOUT_S = 300  # load.js's own bound on the play (--timeout)
SETUP_MARGIN_S = 120  # ours beyond it: lobby, 2·M socket.io clients, the report


class PeerFailed(RuntimeError):
    """The harness could not be installed or run; the message has the tail of its output."""


# --- can it run here ------------------------------------------------------------------------------
def source_dir(env: Mapping[str, str] = os.environ) -> Path:
    return Path(env.get(SOURCE_ENV) or DEFAULT_SOURCE)


def unavailable(env: Mapping[str, str] = os.environ) -> str | None:
    """Why the peer cannot be measured here (one line), or None when it can."""
    source = source_dir(env)
    if not all((source / name).is_file() for name in ("package-lock.json", "server.js", "load.js")):
        return f"no boardgame.io harness in {source} (set {SOURCE_ENV} to its directory)"
    found = {tool: shutil.which(tool, path=env.get("PATH", os.defpath)) for tool in ("node", "npm")}
    missing = [tool for tool, path in found.items() if path is None]
    if missing:
        return (
            f"{' and '.join(missing)} not found on PATH; install Node.js ≥ {MIN_NODE} with npm "
            "to measure boardgame.io beside plylog"
        )
    version = _node_version(found["node"])
    if version is None or version < MIN_NODE:
        return f"{found['node']} is not Node.js ≥ {MIN_NODE} (`node --version` said {version or 'nothing usable'})"
    return None


def _node_version(node: str) -> int | None:
    try:
        said = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"v(\d+)\.", said.strip())
    return int(found.group(1)) if found else None


# --- the harness's copy and its node_modules ------------------------------------------------------
def _source_files(source: Path) -> list[Path]:
    return sorted(
        p for p in source.rglob("*") if p.is_file() and not NOT_COPIED.intersection(p.relative_to(source).parts[:1])
    )


def source_digest(source: Path) -> str:
    digest = hashlib.sha256()
    for path in _source_files(source):
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def prepare(cache: Path, say: Callable[[str], None] = lambda _: None, env: Mapping[str, str] = os.environ) -> Path:
    """The harness, copied and installed under `cache`; returns its directory."""
    source, work = source_dir(env), cache / "boardgameio"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "boardgameio.lock", "w") as lock:  # two benchmarks at once copy and install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        digest = source_digest(source)
        stamp = work / SOURCE_STAMP
        if not stamp.is_file() or stamp.read_text() != digest:
            say(f"peer: copying the boardgame.io harness from {source} to {work}")
            _copy(source, work)
            stamp.write_text(digest)
        wanted = hashlib.sha256((work / "package-lock.json").read_bytes()).hexdigest()
        installed = work / "node_modules" / LOCK_STAMP
        if not installed.is_file() or installed.read_text() != wanted:
            say(f"peer: npm ci in {work} (once per package-lock.json)")
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=work,
                env={**env, "NODE_ENV": "production"},
                capture_output=True,
                text=True,
                timeout=900,
                stdin=subprocess.DEVNULL,
            )
            if done.returncode:
                raise PeerFailed(
                    f"npm ci in {work} failed (exit {done.returncode}): {(done.stdout + done.stderr)[-1500:]}"
                )
            installed.write_text(wanted)
    return work


def _copy(source: Path, work: Path) -> None:
    """Replace every file of `work` but node_modules by the source's, writable (a read-only source's
    mode would be copied with it)."""
    work.mkdir(parents=True, exist_ok=True)
    for old in work.iterdir():
        if old.name != "node_modules":
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    for path in _source_files(source):
        target = work / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        target.chmod(0o755 if os.access(path, os.X_OK) else 0o644)


# --- load.js's report -----------------------------------------------------------------------------
def parse_report(output: str) -> dict:
    """load.js's JSON line (the last line of its stdout that is a JSON object)."""
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError as error:
                raise PeerFailed(f"load.js printed a broken JSON line ({error}): {line[:300]}") from None
    raise PeerFailed(f"load.js printed no JSON line: {output[-500:]!r}")


def figures_of(report: dict, prefix: str = "") -> dict[str, float]:
    """plylog's figures of one load.js report: moves/s (steady: the median whole second, when the
    run lasted 2 s or more), latency quantiles (ms), server CPU per move (and with its clients'), peak RSS."""
    if not report.get("complete"):
        raise PeerFailed(
            f"load.js did not finish its matches ({report.get('matchesDone')} of "
            f"{report.get('matches')} in {report.get('elapsedS')} s)"
        )
    latency, server = report["latencyMs"], report.get("server") or {}
    figures = {
        "moves_per_s": float(report["movesPerS"]),
        "matches": float(report["matches"]),
        **{f"{q}_ms": float(latency[q]) for q in ("p50", "p95", "p99", "max")},
    }
    if report.get("steadyMovesPerS") is not None:
        figures["steady_moves_per_s"] = float(report["steadyMovesPerS"])
    if server.get("cpuPct") is not None and report.get("moves"):
        figures["server_cpu_pct"] = float(server["cpuPct"])
        figures["server_cpu_us_per_move"] = server["cpuPct"] / 100 * report["elapsedS"] / report["moves"] * 1e6
        loader = (report.get("loader") or {}).get("cpuPct")
        if loader is not None:  # its clients too, over the same play: the peer's whole cost per move
            figures["all_in_cpu_us_per_move"] = (
                (server["cpuPct"] + loader) / 100 * report["elapsedS"] / report["moves"] * 1e6
            )
    if server.get("rssMbPeak") is not None:
        figures["server_rss_peak_mib"] = float(server["rssMbPeak"])
    if report.get("offeredRate"):  # held: the steady rate (a run's first and last seconds ramp up and down)
        figures["offered_per_s"] = float(report["offeredRate"])
        figures["achieved_per_s"] = figures.get("steady_moves_per_s", figures["moves_per_s"])
        figures["rate_held"] = figures["achieved_per_s"] / figures["offered_per_s"]
    return {f"{prefix}{key}": value for key, value in figures.items()}


def read_trace(path: Path) -> list[float]:
    """Sorted latencies (ms) of load.js's --trace file (`<send ms> <latency ms>` a line)."""
    return sorted(float(line.split()[1]) for line in path.read_text().splitlines() if line.strip())


# --- processes --------------------------------------------------------------------------------------
_RUNNING: set[asyncio.subprocess.Process] = set()


@atexit.register
def _kill_leftovers() -> None:
    for process in list(_RUNNING):
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)


async def _start(
    args: list[str], cwd: Path, env: dict[str, str], log: Path, stdout: int | None = None
) -> asyncio.subprocess.Process:
    with open(log, "ab") as out:
        process = await asyncio.create_subprocess_exec(
            *args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout or out, stderr=out, start_new_session=True
        )
    _RUNNING.add(process)
    return process


async def _stop(process: asyncio.subprocess.Process, grace_s: float = 5.0) -> None:
    """SIGTERM to its PID, SIGKILL after `grace_s`; waits for it (also when the run is cancelled)."""
    try:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.shield(asyncio.wait_for(process.wait(), grace_s))
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await asyncio.shield(process.wait())
    finally:
        if process.returncode is not None:
            _RUNNING.discard(process)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_env() -> dict[str, str]:
    return {**os.environ, "NODE_ENV": "production"}


@contextlib.asynccontextmanager
async def server(work: Path, log: Path, start_timeout_s: float = 30.0) -> AsyncIterator[tuple[int, str]]:
    """A fresh `node server.js` on a free port: (its PID, its URL); stopped by PID afterwards."""
    for _attempt in range(3):  # a port picked free can be taken before the server binds it
        port = _free_port()
        log.write_text("")
        process = await _start(["node", "server.js"], work, {**node_env(), "PORT": str(port)}, log)
        try:
            deadline = time.monotonic() + start_timeout_s
            while "listening" not in log.read_text(errors="replace"):
                if process.returncode is not None or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            else:
                yield process.pid, f"http://127.0.0.1:{port}"
                return
        finally:
            await _stop(process)
        if "EADDRINUSE" not in log.read_text(errors="replace"):
            break
    raise PeerFailed(
        f"node server.js did not start (exit {process.returncode}); {log}:\n{log.read_text(errors='replace')[-1500:]}"
    )


async def load(
    work: Path, url: str, server_pid: int, log: Path, *args: str, tick: Callable[[float], None] = lambda _: None
) -> dict:
    """One `node load.js` against the server; its report. `tick(seconds so far)` every 0.25 s."""
    command = [
        "node",
        "load.js",
        "--server",
        url,
        "--server-pid",
        str(server_pid),
        "--timeout",
        str(LOAD_TIMEOUT_S),
        *args,
    ]
    process = await _start(command, work, node_env(), log, stdout=asyncio.subprocess.PIPE)
    started = time.monotonic()
    reading = asyncio.ensure_future(process.stdout.read())
    try:
        while not reading.done():
            if time.monotonic() - started > LOAD_TIMEOUT_S + SETUP_MARGIN_S:
                raise PeerFailed(f"load.js ran longer than {LOAD_TIMEOUT_S + SETUP_MARGIN_S} s: {' '.join(args)}")
            tick(time.monotonic() - started)
            await asyncio.wait([reading], timeout=0.25)
        output = reading.result().decode(errors="replace")
        await process.wait()
    finally:
        reading.cancel()
        await _stop(process)
    if process.returncode not in (0, 3):  # 3: it timed out and says so in its report
        raise PeerFailed(
            f"load.js failed (exit {process.returncode}); {log}:\n{log.read_text(errors='replace')[-1500:]}"
        )
    return parse_report(output)


# --- the scenario -----------------------------------------------------------------------------------
MOVES_PER_MATCH = 49  # a Strands match of the harness's random bots, for the progress bar only
CLOSED_LOOP_GUESS = 1_500  # moves/s, likewise


def _expected_s(matches: int, rate: float) -> float:
    return 1.0 + 0.03 * matches + matches * MOVES_PER_MATCH / (rate or CLOSED_LOOP_GUESS)


async def run(ctx: Context) -> RunResult:
    """Throughput (closed loop, `--rate 0`) and latency at plylog's offered rate, each on a fresh
    server after a warm-up that lets V8 optimise the hot code."""
    from .scenarios import RunResult

    p = ctx.params
    work = await asyncio.to_thread(prepare, ctx.stack.cache_dir, ctx.say)
    logs = ctx.stack.work_dir / "runs" / f"peer-{ctx.run_number}"
    logs.mkdir(parents=True, exist_ok=True)
    result = RunResult()
    measures = (
        ("throughput", "", p.peer_matches, 0.0, f"boardgame.io closed loop, {p.peer_matches} matches"),
        (
            "latency",
            "latency_",
            p.peer_latency_matches,
            p.latency_rate,
            f"boardgame.io at {p.latency_rate:,.0f} moves/s offered",
        ),
    )
    total = sum(_expected_s(p.peer_warmup_matches, 0) + _expected_s(m[2], m[3]) for m in measures)
    done = 0.0

    def ticker(expected: float) -> Callable[[float], None]:
        return lambda seconds: ctx.step((done + min(seconds, expected * 0.95)) / total)

    for label, prefix, matches, rate, title in measures:
        trace = logs / f"{label}.trace"
        async with server(work, logs / f"server-{label}.log") as (pid, url):
            warm = _expected_s(p.peer_warmup_matches, 0)
            await load(
                work,
                url,
                pid,
                logs / f"warmup-{label}.log",
                "--matches",
                str(p.peer_warmup_matches),
                "--seed",
                "99",
                tick=ticker(warm),
            )
            done += warm
            measured = _expected_s(matches, rate)
            report = await load(
                work,
                url,
                pid,
                logs / f"load-{label}.log",
                "--matches",
                str(matches),
                "--rate",
                f"{rate:g}",
                "--seed",
                str(ctx.run_number),
                "--label",
                title,
                "--trace",
                str(trace),
                tick=ticker(measured),
            )
            done += measured
        result.figures.update(figures_of(report, prefix))
        result.latencies[title] = read_trace(trace)
        ctx.step(done / total)
    return result
