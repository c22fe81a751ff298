"""Where the bot service thinks: searching bots in a pool of worker processes shared fairly between
players, cheap bots at once.

- A bot that searches (MCTS, the Mastermind strategies) decides in one of `workers` processes,
  started with a lower CPU priority (niceness THINK_NICENESS) so that the rules worker, the
  projector, the gateway and this service's own loop keep their time on a shared machine.
- The processes are handed out round-robin between *lanes* (a lane is the person a match is played
  against: `players.lane`), never first come first served by match, and one lane holds at most
  `workers - 1` of them (at least 1): however many matches one player keeps busy, another player's
  turn starts thinking at once, or after the one decision that frees a process.
- A bot that does not search (`bot:random`, and the random fallback of a refused move) decides at
  once in a thread, queued behind nothing.

A decision is the same wherever it is made: the bot, its seeded rng and its budget go with it, so a
playout budget keeps a bot deterministic (a clock's seconds cap reads the clock, as before).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import time
from collections import Counter, deque
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from games.public import PublicPosition

from .players import BotPlayers, Turn

log = logging.getLogger("plylog.bots")
MAX_DEFAULT_WORKERS = 4  # each worker is a Python process of its own (~40 MB)
THINK_NICENESS = 10  # the worker processes' niceness: thinking is background work
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies (Linux)
_WORKER_PLAYERS: BotPlayers | None = None  # in a worker process: its own copy of the bots


def _start_worker(bot_ids: list[str], secret_key: bytes) -> None:
    global _WORKER_PLAYERS  # one per worker process, made once at its start
    with contextlib.suppress(OSError):
        os.nice(THINK_NICENESS)
    # The service stops its workers itself (a SIGTERM to the process group is for it alone), and a
    # worker must not outlive a service that was killed: on Linux it gets SIGKILL when the service dies.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _WORKER_PLAYERS = BotPlayers(bot_ids, secret_key)


def _decide(turn: Turn, position: PublicPosition, view: dict[str, Any], retry: bool) -> dict[str, Any]:
    """In a worker process: the move record of `turn` (the clock is read here, as the search starts)."""
    assert _WORKER_PLAYERS is not None, "the worker was not started by _start_worker"
    return _WORKER_PLAYERS.move(turn, position, view, int(time.time() * 1000), retry)


def _ready() -> None:
    """A task that makes the pool start a worker."""


class FairGate:
    """At most `slots` holders at once, at most `per_lane` of them in one lane; a freed slot goes to
    the waiting lane served least recently (round-robin between lanes, first come first served
    within one). Cancelling a waiter gives up its place (or the slot it was just given)."""

    def __init__(self, slots: int, per_lane: int):
        self.slots, self.per_lane = slots, per_lane
        self.busy = 0
        self.holding: Counter[str] = Counter()
        self._waiting: dict[str, deque[asyncio.Future]] = {}  # lanes in the order they came
        self._served: dict[str, int] = {}  # lane -> when it was last given a slot (lanes in use only)
        self._grants = 0

    @property
    def waiting(self) -> int:
        return sum(len(w) for w in self._waiting.values())

    @contextlib.asynccontextmanager
    async def slot(self, lane: str) -> AsyncIterator[None]:
        granted = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(lane, deque()).append(granted)
        self._grant()
        try:
            await granted
        except BaseException:
            if granted.done() and not granted.cancelled():
                self._release(lane)  # given the slot in the moment it was cancelled
            else:
                granted.cancel()
                self._forget(lane, granted)
            raise
        try:
            yield
        finally:
            self._release(lane)

    def _grant(self) -> None:
        while self.busy < self.slots:
            eligible = [lane for lane in self._waiting if self.holding[lane] < self.per_lane]
            if not eligible:
                return
            lane = min(eligible, key=lambda name: self._served.get(name, -1))  # ties: the first to come
            self._forget(lane, self._waiting[lane][0]).set_result(None)
            self._grants += 1
            self._served[lane] = self._grants
            self.busy += 1
            self.holding[lane] += 1

    def _forget(self, lane: str, waiter: asyncio.Future) -> asyncio.Future:
        queue = self._waiting[lane]
        queue.remove(waiter)
        if not queue:
            del self._waiting[lane]
            if not self.holding[lane]:
                self._served.pop(lane, None)
        return waiter

    def _release(self, lane: str) -> None:
        self.busy -= 1
        self.holding[lane] -= 1
        if self.holding[lane] <= 0:
            del self.holding[lane]
            if lane not in self._waiting:
                self._served.pop(lane, None)  # a lane that comes back later is served first again
        self._grant()


def default_workers() -> int:
    """The cores this process may run on, at most MAX_DEFAULT_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_WORKERS, cores))


class Thinker:
    """Decides bot moves: searching bots in the fair process pool, the others at once."""

    def __init__(self, bot_ids: list[str], secret_key: bytes, workers: int):
        self.players = BotPlayers(bot_ids, secret_key)
        self.workers = workers
        self.gate = FairGate(workers, max(1, workers - 1))
        self._args = (bot_ids, secret_key)
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        # spawn, not fork: this process has threads (asyncio.to_thread) by the time a worker starts
        return ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=self._args,
        )

    async def start(self) -> None:
        """Start every worker process now (each imports the games), not at the first turn."""
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._pool, _ready) for _ in range(self.workers)))
        log.info(
            "thinking in %d worker process(es) at niceness %d, at most %d for one player",
            self.workers,
            THINK_NICENESS,
            self.gate.per_lane,
        )

    def close(self) -> None:
        """Stop the workers (a search under way is finished first: a fraction of a second)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    async def move(
        self, lane: str, turn: Turn, position: PublicPosition, view: dict[str, Any], retry: bool = False
    ) -> dict[str, Any]:
        """The move record of `turn`, decided on `position` (the public match at `turn.seq`)."""
        if not self.players.searches(turn.player, retry):
            return await asyncio.to_thread(self.players.move, turn, position, view, int(time.time() * 1000), retry)
        sent = PublicPosition(state=position.state, seq=position.seq)  # the views stay here
        async with self.gate.slot(lane):
            pool = self._pool
            try:
                return await self._in(pool, turn, sent, view, retry)
            except BrokenProcessPool:  # a worker died (killed, out of memory): a new pool, once
                if self._pool is pool:
                    log.error("a thinking process died; starting new ones (deciding %s again)", turn)
                    pool.shutdown(wait=False, cancel_futures=True)
                    self._pool = self._new_pool()
                return await self._in(self._pool, turn, sent, view, retry)

    @staticmethod
    async def _in(pool: ProcessPoolExecutor, turn: Turn, position: PublicPosition, view: dict, retry: bool) -> dict:
        """The decision in a worker process. A search under way cannot be stopped: a caller that is
        cancelled keeps its slot until the process is free again, so the gate never over-books."""
        decided = asyncio.get_running_loop().run_in_executor(pool, _decide, turn, position, view, retry)
        try:
            return await asyncio.shield(decided)
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await decided
            raise
