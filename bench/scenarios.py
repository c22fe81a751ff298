"""The benchmark scenarios. Each is one measured run: it makes its own topics and Redis keys
(bench.stack), starts the processes it measures (bench.procs), and returns its figures.

Throughput runs start the processes on empty topics, wait until they are ready (joined,
partitions assigned), then produce a large pre-generated load as fast as the client can
(~150,000 records/s in whole batches, so the producer finishes long before the consumers and
costs them little CPU) and time from the first send until the last record is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from games.fold import encode
from services.common import kafka_read, moves_log, redis_client
from services.common.kafka_partition import partition_of
from services.common.redis_keys import Keys

from . import http_bots, latency, ws_bots
from .cpu_clock import machine_busy_seconds
from .loadgen import GAMES, LoadSpec, Playouts, Record, cached, match_key, produce_all, produce_at_rate
from .logs import interleave, random_match
from .measure import EndOffsets, Series, count_records, follow, latency_figures
from .procs import (
    PROJECTOR_CONSUMER,
    REPO,
    Service,
    Services,
    floor_hops,
    gateway,
    notifier_with_platform_webhook,
    passthrough,
    projector,
    rules_worker,
    service_env,
)
from .replay_bench import replay_rate
from .stack import BenchStack, RunSpace

MIB = 1024 * 1024


@dataclass(frozen=True)
class Params:
    runs: int = 3  # runs per scenario (each figure: median, min, max)
    warmup: bool = True  # unrecorded runs first (a fresh broker's JVM is slow): bench/runner.py warmups
    moves: int = 100_000  # throughput load (baseline, pipeline, scale)
    open_matches: int = 1_000  # matches in progress at once in that load
    latency_rate: float = 1_000.0  # offered moves/s
    latency_seconds: float = 30.0
    latency_warmup_s: float = 3.0  # moves sent before this are not counted
    latency_bots: int = 400
    memory_matches: int = 10_000
    memory_moves_each: int = 4  # records per match after its create (all matches stay active)
    replay_matches: int = 300  # per game
    http_bots: int = 48  # concurrent closed-loop HTTP clients
    http_seconds: float = 20.0
    ws_matches: int = 200  # seat-socket clients: matches played at once, 2 sockets each (as the peer's)
    ws_single_matches: int = 4  # then one client alone: matches played one move at a time
    peer_warmup_matches: int = 100  # boardgame.io: matches played on each fresh server before it is measured
    peer_matches: int = 200  # its closed-loop throughput run
    peer_latency_matches: int = 200  # its run at `latency_rate` offered
    recovery_moves: int = 1_000_000  # moves of finished matches in the log when the worker is killed
    recovery_active: int = 1_000  # and matches in progress (5 records each)
    recovery_settle_s: float = 150.0  # after the load, before the first kill: Kafka's cleaner compacts the changelog
    recovery_kills: int = 3  # SIGKILL + restart, one after the other (the figure: their median)


FULL = Params()
QUICK = Params(
    runs=1,
    warmup=False,
    moves=3_000,
    open_matches=200,
    latency_seconds=5.0,
    latency_warmup_s=1.0,
    latency_bots=100,
    memory_matches=400,
    replay_matches=15,
    http_bots=16,
    http_seconds=4.0,
    ws_matches=50,
    ws_single_matches=1,
    peer_warmup_matches=20,
    peer_matches=50,
    peer_latency_matches=50,
    recovery_moves=20_000,
    recovery_active=200,
    recovery_settle_s=0.0,
    recovery_kills=1,
)


@dataclass
class RunResult:
    figures: dict[str, float] = field(default_factory=dict)
    series: dict[str, Series] = field(default_factory=dict)  # throughput over time
    latencies: dict[str, list[float]] = field(default_factory=dict)  # sorted, ms (latency CDF)
    notes: list[str] = field(default_factory=list)


@dataclass
class Context:
    stack: BenchStack
    params: Params
    say: Callable[[str], None] = lambda _: None
    step: Callable[[float], None] = lambda _: None  # progress of the current run, 0..1
    profile_dir: Path | None = None  # py-spy flame graphs of the processes under test go here
    run_number: int = 1
    _loads: dict = field(default_factory=dict)

    def profile(self, label: str) -> Path | None:
        """Path prefix for the flame graphs of this run's processes (None: no profiling)."""
        return None if self.profile_dir is None else self.profile_dir / f"{label}-run{self.run_number}"

    def memo(self, key, make: Callable[[], Any]) -> Any:
        """`make()` once per invocation (loads are made before any clock runs and reused by every run)."""
        if key not in self._loads:
            self._loads[key] = make()
        return self._loads[key]

    def playouts(self, spec: LoadSpec) -> Playouts:
        return self.memo(spec, lambda: cached(spec, self.stack.cache_dir, self.say))

    def throughput_load(self) -> list[Record]:
        p = self.params
        return self.memo(
            ("mixed", p.moves, p.open_matches), lambda: self.playouts(LoadSpec.for_moves(p.moves)).mixed(p.open_matches)
        )


# --- progress measures ---------------------------------------------------------------------------
Progress = Callable[[], Awaitable[int]]


class ProjectorOffsets:
    """How many results the projector has applied: the next offsets it stored in Redis for the
    results topic (written atomically with the writes they cover)."""

    def __init__(self, stack: BenchStack, space: RunSpace):
        self.client = redis_client.connect_async(stack.redis_url)
        keys = Keys(space.redis_prefix, stack.partitions)
        self.keys = [keys.offsets(PROJECTOR_CONSUMER, p) for p in keys.all_partitions()]
        self.field_prefix = f"{space.topics.results}:".encode()

    async def total(self) -> int:
        async with self.client.pipeline(transaction=False) as pipe:
            for key in self.keys:
                pipe.hgetall(key)
            stored = await pipe.execute()
        return sum(int(v) for offsets in stored for k, v in offsets.items() if k.startswith(self.field_prefix))

    async def close(self) -> None:
        await self.client.aclose()


@dataclass
class Burst:
    rate: float  # records/s from the first send to the last record done
    series: Series
    cpu_us: dict[str, float]  # CPU time per record of each process under test (user + system, µs)


@contextlib.asynccontextmanager
async def progress_of(ctx: Context, space: RunSpace, until_projector: bool) -> AsyncIterator[Progress]:
    """How many records are done: results on Kafka, or results the projector applied in Redis."""
    if until_projector:
        offsets = ProjectorOffsets(ctx.stack, space)
        try:
            yield offsets.total
        finally:
            await offsets.close()
    else:
        async with EndOffsets(ctx.stack.bootstrap, space.topics.results, ctx.stack.partitions) as results:
            yield results.total


async def burst(
    ctx: Context, space: RunSpace, records: list[Record], running: Services, until_projector: bool = False
) -> Burst:
    """Produce `records` as fast as possible and follow the progress until all are done."""
    async with progress_of(ctx, space, until_projector) as progress:
        cpu_before = running.cpu_seconds()
        started = time.perf_counter()
        sending = asyncio.ensure_future(
            produce_all(ctx.stack.bootstrap, space.topics.moves, records, ctx.stack.partitions)
        )
        try:
            series = await follow(
                progress, len(records), on_sample=lambda done: ctx.step(done / len(records)), check=running.check_alive
            )
            elapsed = time.perf_counter() - started
            cpu_after = running.cpu_seconds()
        finally:
            await sending
    cpu_us = {name: (cpu_after[name] - cpu_before[name]) * 1e6 / len(records) for name in cpu_before}
    return Burst(len(records) / elapsed, series, cpu_us)


async def throughput(
    ctx: Context, label: str, make: Callable[[RunSpace], list[Service]], until_projector: bool = False
) -> Burst:
    with ctx.stack.run_space(label) as space, Services(*make(space), profile=ctx.profile(label)) as running:
        return await burst(ctx, space, ctx.throughput_load(), running, until_projector)


# --- scenarios -----------------------------------------------------------------------------------
async def baseline(ctx: Context) -> RunResult:
    measured = await throughput(ctx, "baseline", lambda space: [passthrough(ctx.stack, space)])
    return RunResult(
        {"records_per_s": measured.rate, "cpu_us_per_record": measured.cpu_us["passthrough"]},
        {"baseline pass-through": measured.series},
    )


async def pipeline(ctx: Context) -> RunResult:
    rules = await throughput(ctx, "rules", lambda space: [rules_worker(ctx.stack, space)])
    both = await throughput(
        ctx,
        "pipeline",
        lambda space: [rules_worker(ctx.stack, space), projector(ctx.stack, space)],
        until_projector=True,
    )
    return RunResult(
        {
            "rules_moves_per_s": rules.rate,
            "rules_cpu_us_per_move": rules.cpu_us["rules-1"],
            "moves_per_s": both.rate,
            "projector_cpu_us_per_result": both.cpu_us["projector"],
        },
        {"rules worker only": rules.series, "pipeline (rules + projector)": both.series},
    )


SCALE_WORKERS = (1, 2, 3)


async def scale(ctx: Context) -> RunResult:
    """The burst on 1, 2 and 3 rules workers in one group: moves/s, and the CPU every worker spent
    per move added up (it must not grow with the number of workers: the work divides, nothing is
    done twice). Measured as deployed (one standby per table partition: from two workers on, each
    standby re-reads the changelog writes of another worker's partitions) and without standbys,
    which is the fold's own work divided; the difference is what the hot standby costs a move."""
    run = RunResult()
    for workers in SCALE_WORKERS:
        for standbys, suffix in ((None, ""), (0, "_no_standby")):
            if workers == 1 and standbys == 0:
                continue  # one worker has no standby anyway
            measured = await throughput(
                ctx,
                f"scale{workers}{suffix}",
                lambda space: [rules_worker(ctx.stack, space, n + 1, standbys) for n in range(workers)],
            )
            run.figures[f"workers_{workers}{suffix}_moves_per_s"] = measured.rate
            run.figures[f"workers_{workers}{suffix}_cpu_us_per_move"] = sum(measured.cpu_us.values())
            label = f"{workers} rules worker{'s' if workers > 1 else ''}{', no standby' if suffix else ''}"
            run.series[label] = measured.series
    one = run.figures["workers_1_cpu_us_per_move"]
    for workers in SCALE_WORKERS[1:]:
        run.figures[f"speedup_{workers}"] = (
            run.figures[f"workers_{workers}_moves_per_s"] / run.figures["workers_1_moves_per_s"]
        )
        run.figures[f"cpu_ratio_{workers}"] = run.figures[f"workers_{workers}_cpu_us_per_move"] / one
        run.figures[f"cpu_ratio_{workers}_no_standby"] = (
            run.figures[f"workers_{workers}_no_standby_cpu_us_per_move"] / one
        )
    run.figures["speedup"] = run.figures["speedup_2"]
    return run


async def latency_run(ctx: Context) -> RunResult:
    dead_endpoint = os.environ.get("PLYLOG_BENCH_DEAD_ENDPOINT", "")  # + a notifier sending there

    def services(space: RunSpace) -> list[Service]:
        measured = [rules_worker(ctx.stack, space), projector(ctx.stack, space)]
        if dead_endpoint:
            measured.append(notifier_with_platform_webhook(ctx.stack, space, dead_endpoint))
        return measured

    return await _closed_loop_latency(ctx, "latency", services)


async def floor(ctx: Context) -> RunResult:
    """The latency scenario's load on the design's hops with no work at them (bench/hops.py): what
    no rules worker and projector could go under on this machine, beside the peer's. Then the same
    with the first hop a Faust agent that only forwards (`faust_` figures): the framework's share."""
    run = await _closed_loop_latency(ctx, "floor", lambda space: floor_hops(ctx.stack, space))
    faust = await _closed_loop_latency(ctx, "floor-faust", lambda space: floor_hops(ctx.stack, space, "faust-relay"))
    run.figures.update({f"faust_{key}": value for key, value in faust.figures.items()})
    run.latencies.update({f"{where}, Faust relay": values for where, values in faust.latencies.items()})
    return run


def _write_trace(label: str, seen: latency.Seen, after: float) -> None:
    """With PLYLOG_TRACE_DIR set, when each move was sent and seen, for `python -m bench.trace`."""
    directory = os.environ.get("PLYLOG_TRACE_DIR")
    if directory:
        sightings = {"sent": seen.sent, "at": seen.at, "after": after}
        (Path(directory) / f"bench-{label}.json").write_bytes(orjson.dumps(sightings))


async def _closed_loop_latency(ctx: Context, label: str, make: Callable[[RunSpace], list[Service]]) -> RunResult:
    p = ctx.params
    matches = iter(ctx.playouts(LoadSpec.for_moves(int(p.latency_rate * p.latency_seconds * 1.3) + 1000, seed=7)))
    seen = latency.Seen(decisive="views")
    with ctx.stack.run_space(label) as space, Services(*make(space), profile=ctx.profile(label)):
        async with latency.observing(ctx.stack, space, seen):
            started = time.perf_counter()
            report = await latency.play(
                ctx.stack.bootstrap,
                space.topics.moves,
                matches,
                p.latency_bots,
                p.latency_rate,
                p.latency_seconds,
                seen,
                ctx.step,
            )
    _write_trace(label, seen, after=started + p.latency_warmup_s)
    run = RunResult(
        {
            "offered_per_s": p.latency_rate,
            "achieved_per_s": report.achieved_rate,
            "rate_held": report.achieved_rate / p.latency_rate,
            "missed_ticks": report.missed_ticks,
            "unanswered": report.unanswered,
        }
    )
    for observer, where, prefix in (
        ("views", "to the view in Redis", ""),
        ("results", "to the result on Kafka", "results_"),
    ):
        values = seen.latencies_ms(observer, after=started + p.latency_warmup_s)
        run.latencies[where] = values
        run.figures.update(latency_figures(values, prefix))
    return run


async def memory(ctx: Context) -> RunResult:
    p = ctx.params
    playouts = ctx.playouts(LoadSpec.active_matches(p.memory_matches, p.memory_moves_each + 1, seed=11))
    with ctx.stack.run_space("memory") as space:
        services = [rules_worker(ctx.stack, space), projector(ctx.stack, space)]
        with Services(*services, profile=ctx.profile("memory")) as running:
            idle = {s.name: s.rss_bytes() / MIB for s in services}
            await burst(ctx, space, playouts.mixed(len(playouts)), running, until_projector=True)
            await asyncio.sleep(1.0)  # let the last batch's garbage go
            loaded = {s.name: s.rss_bytes() / MIB for s in services}
    return RunResult(
        {
            "active_matches": len(playouts),
            "rules_rss_mib": loaded["rules-1"],
            "rules_idle_rss_mib": idle["rules-1"],
            "projector_rss_mib": loaded["projector"],
            "projector_idle_rss_mib": idle["projector"],
        }
    )


async def recovery(ctx: Context) -> RunResult:
    """A worker SIGKILLed with `recovery_moves` moves of finished matches in the log and
    `recovery_active` matches in progress: seconds from the restart until it is ready (its
    partitions assigned and its table recovered from the changelog), and the records in the
    changelog when it was killed (what a recovery reads). The finished matches come as a burst;
    then, as on an installation that keeps running, the active matches' moves trickle in for
    `recovery_settle_s` (Kafka closes changelog segments on the next write after a minute, and
    only closed ones are compacted: services/rules/faust_adapter/table.py CHANGELOG_COMPACTION)."""
    p = ctx.params
    finished = ctx.playouts(LoadSpec.for_moves(p.recovery_moves)).mixed(p.open_matches)
    active = ctx.playouts(LoadSpec.active_matches(p.recovery_active, 5, seed=13))
    trickle = active.mixed(len(active))
    run = RunResult({"finished_moves": len(finished), "active_matches": len(active)})
    with ctx.stack.run_space("recovery") as space:
        worker = rules_worker(ctx.stack, space)
        with Services(worker, profile=ctx.profile("recovery")) as running:
            await burst(ctx, space, finished, running)
            if p.recovery_settle_s:
                await produce_at_rate(
                    ctx.stack.bootstrap, space.topics.moves, trickle, len(trickle) / p.recovery_settle_s
                )
            else:
                await produce_all(ctx.stack.bootstrap, space.topics.moves, trickle, ctx.stack.partitions)
            async with EndOffsets(ctx.stack.bootstrap, space.topics.results, ctx.stack.partitions) as results:
                await follow(results.total, len(finished) + len(trickle), check=running.check_alive)
            run.figures["changelog_records"] = await count_records(
                ctx.stack.bootstrap, space.topics.rules_changelog, ctx.stack.partitions
            )
            seconds = []
            for _ in range(p.recovery_kills):
                worker.kill()
                started = time.perf_counter()
                worker.start()
                await asyncio.to_thread(worker.wait_ready, 300.0)
                seconds.append(time.perf_counter() - started)
            run.figures.update(
                {
                    "recovery_s": sorted(seconds)[len(seconds) // 2],
                    "recovery_max_s": max(seconds),
                    "rss_mib": worker.rss_bytes() / MIB,
                }
            )
    return run


async def replay(ctx: Context) -> RunResult:
    """Offline fold per game (one process = one core), on logs of complete random matches."""
    playouts = ctx.playouts(LoadSpec(ctx.params.replay_matches, seed=3))
    by_game: dict[str, list[list[bytes]]] = defaultdict(list)
    for match in playouts:
        by_game[match_key(match[0]).decode().rsplit("-", 2)[0]].append(match)
    run = RunResult()
    with tempfile.TemporaryDirectory(dir=ctx.stack.work_dir) as tmp:
        for number, game in enumerate(GAMES):
            path = Path(tmp) / f"{game}.jsonl"
            path.write_bytes(b"".join(raw + b"\n" for raw in interleave((iter(m) for m in by_game[game]), 20)))
            replay_rate(path)  # warm: the game's first records import and compile its models
            run.figures[f"{game}_records_per_s"] = replay_rate(path)[1]
            ctx.step((number + 1) / (len(GAMES) + 1))
    run.figures["rebuild_results_per_s"] = await rebuild(ctx)
    ctx.step(1.0)
    return run


def worker_outputs(ctx: Context) -> tuple[list[Record], list[Record]]:
    """The results and outcomes the rules worker gives for the throughput load (the same fold,
    offline), each result keyed to its move's partition as the worker writes it."""

    def fold() -> tuple[list[Record], list[Record]]:
        offsets: dict[int, int] = defaultdict(int)
        placed = []
        for match_id, raw in ctx.throughput_load():
            partition = partition_of(match_id, ctx.stack.partitions)
            placed.append(kafka_read.Record(partition, offsets[partition], match_id, raw))
            offsets[partition] += 1
        results, outcomes = [], []
        for record, taken in moves_log.refold(placed, topic="plylog.moves", partitions=ctx.stack.partitions):
            results.append((record.key, encode(taken.result)))
            if taken.outcome is not None:
                outcomes.append((record.key, encode(taken.outcome)))
        return results, outcomes

    return ctx.memo(("outputs", ctx.params.moves, ctx.params.open_matches), fold)


REBUILT = re.compile(rb"applied (\d+) results .* and (\d+) outcomes .*, (\d+) records/s")


async def rebuild(ctx: Context) -> float:
    """`plylog rebuild` of the throughput load's results: results applied per second."""
    results, outcomes = worker_outputs(ctx)
    with ctx.stack.run_space("rebuild") as space:
        await produce_all(ctx.stack.bootstrap, space.topics.results, results, ctx.stack.partitions)
        await produce_all(ctx.stack.bootstrap, space.topics.outcomes, outcomes, 1)
        env = {**os.environ, **service_env(ctx.stack, space), "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-m", "services.cli.main", "rebuild"], env=env, cwd=REPO, capture_output=True, timeout=900
        )
    said = done.stdout + done.stderr
    found = REBUILT.search(said)
    if done.returncode or not found:
        raise RuntimeError(f"plylog rebuild failed (exit {done.returncode}): {said.decode(errors='replace')[-2000:]}")
    applied, outcomes_applied, records_per_s = map(int, found.groups())
    if applied != len(results):
        raise RuntimeError(f"plylog rebuild applied {applied} results of {len(results)}")
    return records_per_s * applied / (applied + outcomes_applied)


async def http(ctx: Context) -> RunResult:
    """Closed-loop HTTP bots through the gateway (rules worker, projector and gateway running)."""
    p = ctx.params
    pool = ctx.playouts(LoadSpec.for_moves(int(p.http_seconds * 1500) + 2000, seed=13))
    with ctx.stack.run_space("http") as space:
        front = gateway(ctx.stack, space)
        with Services(
            rules_worker(ctx.stack, space), projector(ctx.stack, space), front, profile=ctx.profile("http")
        ) as running:
            cpu_before = running.cpu_seconds()
            tally, seconds = await http_bots.play(
                front.ready_url.rsplit("/", 1)[0],
                front.env["PLYLOG_OPERATOR_KEY"],
                iter(pool),
                p.http_bots,
                p.http_seconds,
                ctx.step,
            )
            cpu_after = running.cpu_seconds()
    if not tally.latencies_ms:
        raise RuntimeError(f"no HTTP action succeeded; first failures: {tally.failures}")
    values = sorted(tally.latencies_ms)
    run = RunResult(
        {
            "moves_per_s": tally.moves / seconds,
            "failed": tally.failed,
            **latency_figures(values),
            **{
                f"{name.split('-')[0]}_cpu_us_per_move": (cpu_after[name] - cpu_before[name]) * 1e6 / tally.moves
                for name in cpu_before
            },
        },
        latencies={f"{p.http_bots} HTTP bots, request -> applied result": values},
    )
    if tally.failed:
        run.notes.append(f"{tally.failed} HTTP requests failed or were rejected, e.g. {tally.failures[0]}")
    return run


def whole_machine(running: Services) -> dict[str, float]:
    """CPU seconds so far of each process under test, of this process (the load's clients: the
    seat-socket bots run here) and of every core of the machine (Kafka, Redis and all else too)."""
    return {**running.cpu_seconds(), "clients": time.process_time(), "machine": machine_busy_seconds()}


def cpu_budget(machine_s: float, seconds: float, moves: int) -> dict[str, float]:
    """How busy the cores were while the moves were played, and the moves/s the machine would give
    at that cost per move with every core busy and nothing else running: what no tuning of the
    waits can pass, only a lower cost per move."""
    if not moves or not seconds or machine_s <= 0:
        return {}
    cores = len(os.sched_getaffinity(0))
    return {"cores_busy": machine_s / seconds, "cpu_bound_moves_per_s": cores * moves / machine_s}


WS_GAME, WS_SEED = "strands", 17  # the peer's game (Strands, classic 6-ring board: 49 moves a match)


async def ws(ctx: Context) -> RunResult:
    """Closed-loop clients over the gateway's seat socket (bench/ws_bots.py): `ws_matches` matches
    at once, two sockets each, like the peer's harness; then one client alone, one move at a time
    (rules worker, projector and gateway running, as for `http`)."""
    p = ctx.params
    count = max(p.ws_matches, p.ws_single_matches)

    def make() -> list[list[bytes]]:
        ctx.say(f"generating {count} random {WS_GAME} matches (seed {WS_SEED}) ...")
        return [list(random_match(WS_GAME, WS_SEED, n)) for n in range(count)]

    pool = ctx.memo(("ws", count), make)
    with ctx.stack.run_space("ws") as space:
        front = gateway(ctx.stack, space)
        with Services(
            rules_worker(ctx.stack, space), projector(ctx.stack, space), front, profile=ctx.profile("ws")
        ) as running:
            url, key = front.ready_url.rsplit("/", 1)[0], front.env["PLYLOG_OPERATOR_KEY"]
            book, seconds, cpu = await ws_bots.closed_loop(
                url, key, pool[: p.ws_matches], lambda: whole_machine(running), lambda f: ctx.step(0.85 * f)
            )
            running.check_alive()
            await asyncio.sleep(1.0)  # the last matches' results settle: the client is alone next
            alone = await ws_bots.single_client(
                url, key, pool[: p.ws_single_matches], lambda f: ctx.step(0.85 + 0.15 * f)
            )
            running.check_alive()
    if not book.latencies_ms or not alone.latencies_ms:
        raise RuntimeError(
            f"no seat-socket action was answered accepted; first failures: {book.failures + alone.failures}"
        )
    single = sorted(alone.latencies_ms)
    measured = ws_bots.figures_of(book, seconds, cpu)
    services = ("gateway", "rules", "projector")
    if all(f"{name}_cpu_us_per_move" in measured for name in services):
        measured["services_cpu_us_per_move"] = sum(measured[f"{name}_cpu_us_per_move"] for name in services)
    run = RunResult(
        {
            **measured,
            **cpu_budget(cpu["machine"], seconds, book.moves),
            "matches": float(p.ws_matches),
            **latency_figures(single, "single_"),
            "single_moves": float(alone.moves),
        },
        latencies={
            f"{p.ws_matches} matches closed loop, 2 seat sockets each: action -> its result": sorted(book.latencies_ms),
            "one client alone: action -> its result": single,
        },
    )
    for name, tally in (("closed loop", book), ("one client", alone)):
        if tally.failed:
            run.notes.append(
                f"{name}: {tally.failed} matches stopped (rejected, refused or socket lost), e.g. {tally.failures[0]}"
            )
        if tally.pending:
            run.notes.append(f"{name}: {tally.pending} actions answered pending (no result within the gateway's wait)")
    return run
