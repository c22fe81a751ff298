"""An in-memory world for the rules worker's pipeline (services/rules/pipeline.py): a moves log, the
output topics, the table's changelog and the group's committed offsets, with worker processes
that run the real pipeline, core and read-ahead buffer over fake ports (services/rules/ports.py).

Time is turns of the event loop: Kafka acknowledges a record a few turns after it was sent. Every
port call and every acknowledgement is a numbered *step*; a world can kill a process at any step
(`crash_at`: what it had sent and Kafka had not acknowledged is then lost, kept, or every other
one kept: `unacknowledged`), or rebalance its group there (`rebalance_at`). Nothing a dead process
does reaches the world. `check()` lists what broke the worker's promises:

- nothing lost: every move record has its answer (result or dead letter) on the output topics;
- nothing applied twice: every answer equals the answer of one uninterrupted fold of the log,
  byte for byte, and so do the states recovered from the changelog;
- positions never move back: no worker stores a position below one it stored before or commits
  an offset below one it committed, and no committed offset runs ahead of the position a recovery
  reads (of a partition's positions written, the highest: MatchTable's rule);
- an outcome reaches Kafka only after its match's final result did.
"""

from __future__ import annotations

import asyncio
import functools
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from services.common.moves_log import partition_of
from services.rules.batching import RecordBuffer
from services.rules.core import POSITION_PREFIX, Incoming, Outgoing, RulesCore, stored_offset
from services.rules.faust_adapter.table import TablePositions
from services.rules.pipeline import Pipeline, commit_stored_positions
from tests.support import record

PARTITIONS = 3
MOVES = "w.moves"
#: turns of the loop until Kafka acknowledges a record, per topic (the changelog answers first,
#: outcomes before results: an order of steps that is wrong shows)
ACK_TURNS = {"results": 3, "deadletter": 3, "outcomes": 1, "changelog": 1}
COMMIT_EVERY_TURNS = 4

SIDE2 = {"layout": {"side": 2, "rows": ["22", "212", "22"]}}


def create(match: str, n: int) -> bytes:
    return record(match, "alice", {"type": "create", "game": "strands", "seats": ["alice", "bob"], "options": SIDE2}, n)


def match_records(match: str, finish: bool) -> list[bytes]:
    """A match: created, two moves, a move out of turn, a client's retry, maybe a resignation."""
    records = [
        create(match, 0),
        record(match, "alice", {"type": "place", "cells": [[1, 0]]}, 1),
        record(match, "alice", {"type": "place", "cells": [[0, 0]]}, 2),  # not alice's turn
        record(match, "bob", {"type": "place", "cells": [[0, -1], [-1, 1]]}, 3),
        record(match, "alice", {"type": "place", "cells": [[1, 0]]}, 1),  # the retry of move 1
    ]
    if finish:
        records.append(record(match, "alice", {"type": "resign"}, 5))
    return records


def default_log(matches: int = 4) -> dict[int, list[tuple[bytes, bytes]]]:
    """Each partition's records: matches interleaved on their home partitions, a junk record."""
    log: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(PARTITIONS)}
    per_match = {f"m{n}": match_records(f"m{n}", finish=n % 2 == 1) for n in range(1, matches + 1)}
    for step in range(max(len(r) for r in per_match.values())):
        for match, records in per_match.items():
            if step < len(records):
                log[partition_of(match.encode(), PARTITIONS)].append((match.encode(), records[step]))
    log[0].insert(2, (b"junk", b"\x00 not a move"))
    return log


@dataclass
class Answer:
    kind: str
    value: bytes


def reference(log: dict[int, list[tuple[bytes, bytes]]]) -> tuple[dict[tuple[int, int], list[Outgoing]], dict]:
    """The answers (by move: partition, offset) and final states of one uninterrupted fold of the log."""
    return _reference(tuple((p, tuple(records)) for p, records in sorted(log.items())))


@functools.cache
def _reference(log: tuple[tuple[int, tuple[tuple[bytes, bytes], ...]], ...]) -> tuple[dict, dict]:
    core, table = RulesCore(PARTITIONS), {}
    answers: dict[tuple[int, int], list[Outgoing]] = defaultdict(list)
    for partition, records in log:
        incoming = [Incoming(k, v, partition, o, MOVES) for o, (k, v) in enumerate(records)]
        batch = core.fold_batch(incoming, table.get)
        for out in batch.sends:
            assert out.cause is not None
            answers[(out.cause.partition, out.cause.offset)].append(out)
        table.update({k: v for k, (v, _) in batch.writes.items()})
    states = {k: v for k, v in table.items() if not k.startswith(POSITION_PREFIX)}
    return answers, states


class Refused(Exception):
    """Kafka refuses this record itself (its size)."""


class KafkaDown(Exception):
    """Kafka refuses for a reason of its own (no leader, too few replicas)."""


@dataclass
class World:
    log: dict[int, list[tuple[bytes, bytes]]] = field(default_factory=default_log)
    crash_at: int | None = None
    rebalance_at: dict[int, dict[int, str]] = field(default_factory=dict)  # step -> partition -> owner
    unacknowledged: str = "lost"  # what Kafka keeps of a dead process's records: lost, kept, alternate
    refuse: Callable[[Outgoing], bool] = lambda out: False  # records Kafka refuses for their size
    fail_send: int | None = None  # the nth record sent fails with KafkaDown
    owners: dict[int, str] = field(default_factory=dict)  # partition -> process name (default: all "A")
    pipeline: type[Pipeline] = Pipeline  # a test may give one whose steps are in another order
    commit: Callable[[Any, Any], Awaitable[bool]] = commit_stored_positions

    def __post_init__(self) -> None:
        self.steps = 0
        self.trail: list[str] = []
        self.generation = 1
        self.owner: dict[int, str] = {p: self.owners.get(p, "A") for p in self.log}
        self.starts = 0  # processes started
        self.killed: str | None = None  # the process killed at `crash_at`
        self.answers: dict[tuple[int, int], list[Answer]] = defaultdict(list)  # on the output topics
        self.changelog: list[tuple[bytes, bytes | None, int]] = []  # what Kafka has of the table
        self.committed: dict[int, int] = {}
        self.positions: dict[int, int] = {}  # the position a recovery reads: the highest written
        self.written_by: dict[tuple[str, int], int] = {}  # (process, partition) -> its last position written
        self.commits: dict[tuple[str, int], int] = {}  # (process, partition) -> its last offset committed
        self.violations: list[str] = []
        self.sent = 0
        self.running: list[Process] = []

    # --- steps ----------------------------------------------------------------------------------------
    def step(self, process: Process, what: str) -> bool:
        """A step of `process`; False once it is dead (then it has no effect)."""
        if process.dead:
            return False
        self.steps += 1
        self.trail.append(f"{self.steps} {process.name}: {what}")
        if self.steps == self.crash_at:
            self.killed = process.name
            process.die()
            return False
        if self.steps in self.rebalance_at:
            self.generation += 1
            self.owner.update(self.rebalance_at[self.steps])
        return True

    def owned(self, name: str) -> set[int]:
        return {p for p, owner in self.owner.items() if owner == name}

    # --- what Kafka has ---------------------------------------------------------------------------------
    def published(self, out: Outgoing) -> None:
        assert out.cause is not None
        cause = (out.cause.partition, out.cause.offset)
        if out.kind == "outcomes" and not any(a.kind != "outcomes" for a in self.answers[cause]):
            self.violations.append(f"the outcome answering {cause} reached Kafka before its result")
        self.answers[cause].append(Answer(out.kind, out.value))

    def written(self, writer: str, key: bytes, value: bytes | None, partition: int) -> None:
        """Kafka has a table write. A worker never writes a position below one it wrote before; the
        old owner of a partition may write one after the new owner (a write on its way when the
        group rebalanced): a recovery reads the highest, as MatchTable's does."""
        if key.startswith(POSITION_PREFIX) and value is not None:
            before = self.written_by.get((writer, partition), -1)
            if int(value) < before:
                self.violations.append(f"{writer} wrote the position of {partition} back from {before} to {int(value)}")
            self.written_by[(writer, partition)] = int(value)
            self.positions[partition] = max(int(value), self.position(partition))
        self.changelog.append((key, value, partition))

    def recovered(self, partitions: Iterable[int]) -> dict[bytes, bytes]:
        """The table of `partitions` as a recovery reads the changelog: of a key's values, the one
        written for the highest moves offset wins (MatchTable.apply_changelog_batch)."""
        wanted, table = set(partitions), {}
        for key, value, partition in self.changelog:
            if partition not in wanted:
                continue
            current = table.get(key)
            if value is None:
                table.pop(key, None)
            elif current is None or stored_offset(value) >= stored_offset(current):
                table[key] = value
        return table

    def position(self, partition: int) -> int:
        return self.positions.get(partition, -1)

    def committed_offset(self, committer: str, partition: int, offset: int) -> None:
        if offset > self.position(partition) + 1:
            self.violations.append(
                f"offset {offset} of {partition} committed past the position Kafka has ({self.position(partition)})"
            )
        if offset < self.commits.get((committer, partition), 0):
            self.violations.append(f"{committer} committed the offset of {partition} back to {offset}")
        self.commits[(committer, partition)] = offset
        self.committed[partition] = offset

    # --- the checks -------------------------------------------------------------------------------------
    def answered(self) -> bool:
        return all(
            self.position(p) == len(records) - 1 and all((p, o) in self.answers for o in range(len(records)))
            for p, records in self.log.items()
        )

    def check(self, replace: Callable[[Outgoing], Outgoing | None] = lambda out: None) -> list[str]:
        """What broke the promises (see the module's docstring); [] when nothing did. `replace`
        gives the answer expected in place of one of the fold's (a dead letter for a refused one)."""
        answers, states = reference(self.log)
        problems = list(self.violations)
        for p, records in self.log.items():
            for o in range(len(records)):
                expected = [Answer(a.kind, a.value) for out in answers[(p, o)] for a in [replace(out) or out]]
                got = self.answers.get((p, o), [])
                if not got:
                    problems.append(f"the record at {p}@{o} was never answered (lost)")
                for answer in got:
                    if answer not in expected:
                        problems.append(f"{p}@{o} answered {answer.kind} {answer.value[:120]!r}, not as one fold")
                missing = [a.kind for a in expected if a not in got]
                if got and missing:
                    problems.append(f"{p}@{o} is missing its {missing}")
        table = self.recovered(self.log)
        for key, value in states.items():
            if table.get(key) != value:
                problems.append(f"the state of {key!r} recovered from the changelog is not one fold's")
        return problems


class Process:
    """A rules worker's process: its memory, its read-ahead buffer, its pipeline over fake ports."""

    def __init__(self, world: World, name: str = "A", batch_max: int = 3):
        self.world, self.name, self.dead = world, name, False
        self.inflight: list[tuple[Callable[[], None], asyncio.Future[Any]]] = []
        self.table = FakeTable(self)
        self.positions = TablePositions(self.table)  # the adapter's own: positions live in the table
        self.group = FakeGroup(self)
        self.source = RecordBuffer(batch_max, 0, 2 * batch_max)
        self.producer = FakeProducer(self)
        self.pipeline = world.pipeline(
            RulesCore(PARTITIONS), self.source, self.producer, self.table, self.positions, self.group, in_flight=9
        )
        self.fetching: dict[int, int] = {}
        self.fetched_in: int | None = None
        self.owned: set[int] = set()
        self.tasks: list[asyncio.Task[Any]] = []
        self.failed: BaseException | None = None

    def start(self) -> Process:
        self.world.running.append(self)
        self.world.starts += 1
        self.tasks = [
            asyncio.ensure_future(self._run_pipeline()),
            asyncio.ensure_future(self._fetch()),
            asyncio.ensure_future(self._commit_now_and_then()),
        ]
        return self

    async def _run_pipeline(self) -> None:
        try:
            await self.pipeline.run()
        except Exception as error:  # a failed batch stops the worker (a restart answers it)  # noqa: BLE001
            self.failed = error
            self.stop()

    def die(self) -> None:
        """SIGKILL: nothing more reaches the world; what Kafka had not acknowledged is lost or kept."""
        self.stop()
        policy = self.world.unacknowledged
        for n, (effect, _) in enumerate(self.inflight):
            if policy == "kept" or (policy == "alternate" and n % 2 == 0):
                effect()
        self.inflight.clear()

    def stop(self) -> None:
        self.dead = True
        for task in self.tasks:
            task.cancel()
        if self in self.world.running:
            self.world.running.remove(self)

    def deliver(self, effect: Callable[[], None], label: str, turns: int, fails: BaseException | None = None):
        """A record on its way to Kafka: after `turns` turns Kafka has it (`effect`) and says so."""
        future = asyncio.get_running_loop().create_future()
        entry = (effect, future)
        self.inflight.append(entry)

        def arrive(left: int) -> None:
            if left:
                asyncio.get_running_loop().call_soon(arrive, left - 1)
                return
            if entry not in self.inflight or not self.world.step(self, f"acknowledged {label}"):
                return
            self.inflight.remove(entry)
            if fails is not None:
                future.set_exception(fails)
                return
            effect()
            future.set_result(None)

        asyncio.get_running_loop().call_soon(arrive, turns)
        return future

    async def _fetch(self) -> None:
        """The consumer: after each rebalance, recover the partitions taken over and fetch every
        partition owned from its committed offset, as Faust does; records carry their generation."""
        while True:
            generation = self.world.generation
            if generation != self.fetched_in:
                owned = self.world.owned(self.name)
                self.table.recover(owned - self.owned)
                self.owned, self.fetched_in = owned, generation
                self.fetching = {p: self.world.committed.get(p, 0) for p in owned}
            for partition, offset in sorted(self.fetching.items()):
                records = self.world.log[partition][offset : offset + 2]
                if records:
                    self.fetching[partition] = offset + len(records)
                    await self.source.extend(
                        [Incoming(k, v, partition, offset + n, MOVES, generation) for n, (k, v) in enumerate(records)]
                    )
            await asyncio.sleep(0)

    async def _commit_now_and_then(self) -> None:
        while True:
            for _ in range(COMMIT_EVERY_TURNS):
                await asyncio.sleep(0)
            await self.world.commit(self.positions, self.group)


class FakeTable:
    """The match table of one process (ports.Table): memory, and a changelog Kafka acknowledges."""

    def __init__(self, process: Process):
        self.process, self.world = process, process.world
        self.data: dict[bytes, bytes] = {}
        self.unacknowledged: list[asyncio.Future[Any]] = []

    def recover(self, partitions: Iterable[int]) -> None:
        for key, value in self.world.recovered(partitions).items():
            current = self.data.get(key)
            if current is None or stored_offset(value) >= stored_offset(current):
                self.data[key] = value

    def get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    def store(self, key: bytes, value: bytes, partition: int) -> None:
        if not self.world.step(self.process, f"store {key[:12]!r}"):
            return
        if key.startswith(POSITION_PREFIX) and key in self.data and int(value) < int(self.data[key]):
            self.world.violations.append(f"{self.process.name} moved position {key!r} back to {int(value)}")
        self.data[key] = value
        self._log(key, value, partition)

    def forget(self, key: bytes, partition: int) -> None:
        self.data.pop(key, None)
        self._log(key, None, partition)

    def entries(self) -> Iterable[tuple[bytes, bytes]]:
        return self.data.items()

    def _log(self, key: bytes, value: bytes | None, partition: int) -> None:
        self.unacknowledged.append(
            self.process.deliver(
                lambda: self.world.written(self.process.name, key, value, partition),
                "changelog",
                ACK_TURNS["changelog"],
            )
        )

    async def acknowledged(self) -> None:
        self.world.step(self.process, "wait for the changelog")
        pending = list(self.unacknowledged)
        outcomes = await asyncio.shield(asyncio.gather(*pending, return_exceptions=True))
        self.unacknowledged = [sent for sent in self.unacknowledged if not sent.done()]
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome


class FakeProducer:
    """ports.Producer: a record is acknowledged a few turns after it is sent."""

    def __init__(self, process: Process):
        self.process, self.world = process, process.world

    async def send(self, out: Outgoing) -> asyncio.Future[Any]:
        world = self.world
        if not world.step(self.process, f"send {out.kind}"):
            return asyncio.get_running_loop().create_future()  # dead: never answered
        world.sent += 1
        fails: BaseException | None = None
        if world.refuse(out):
            fails = Refused(f"{len(out.value)} bytes")
        elif world.sent == world.fail_send:
            fails = KafkaDown("not enough replicas")
        return self.process.deliver(lambda: world.published(out), out.kind, ACK_TURNS[out.kind], fails)

    def refused(self, error: BaseException) -> bool:
        return isinstance(error, Refused)

    def pace(self, busy: bool) -> None:
        pass


class FakeGroup:
    """ports.Group: the world's generation and owners; a commit checks what Kafka has."""

    def __init__(self, process: Process):
        self.process, self.world = process, process.world

    @property
    def generation(self) -> int:
        return self.world.generation

    def owned(self) -> set[int]:
        return self.process.owned if self.process.fetched_in == self.world.generation else set()

    async def fetch_again(self, partition: int, offset: int) -> None:
        if self.world.step(self.process, f"fetch {partition} again from {offset}"):
            self.process.fetching[partition] = offset

    async def commit(self, offsets: dict[int, int]) -> bool:
        if not self.world.step(self.process, f"commit {offsets}"):
            return False
        for partition, offset in offsets.items():
            self.world.committed_offset(self.process.name, partition, offset)
        return True


async def play(world: World, names: Iterable[str] = ("A",), restarts: int = 3, turns: int = 20_000) -> None:
    """Run processes until every record is answered and stored; a process that dies (or whose
    batch failed) is started again, `restarts` times at most."""
    processes = {name: Process(world, name).start() for name in names}
    for _ in range(turns):
        if world.answered() and all(not p.pipeline.pending.writes for p in processes.values()):
            break
        for name, process in list(processes.items()):
            if process.dead and restarts > 0:
                restarts -= 1
                processes[name] = Process(world, name).start()
        await asyncio.sleep(0)
    for process in processes.values():
        process.stop()


def run(world: World, replace: Callable[[Outgoing], Outgoing | None] = lambda out: None, **kwargs: Any) -> list[str]:
    """Play `world` to the end; what broke the promises."""
    asyncio.run(play(world, **kwargs))
    return world.check(replace)
