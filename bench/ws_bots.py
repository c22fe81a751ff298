"""Seat-socket bots for the `ws` scenario: closed-loop clients through the gateway's WebSocket seat
endpoint (`GET /v1/matches/{id}/play`), shaped like boardgame.io's harness (bench/peer.py).

1. M matches are made over HTTP (http_bots.create_match: the operator's create, both seat tokens).
2. Two sockets per match, one per seat, are opened and greeted (`hello`).
3. The clock starts and the first action of every match is sent; from then on a client moves when
   what its own socket received (its `result`, or the other seat's move as an `update`) says that
   the match is at the position where the next action is its own, until every match is over.

The actions are the pre-generated random legal ones of `games.playout` (as the HTTP bots play
them): the gateway makes the same create, so the same actions are legal in the same order. A
client's latency is from just before it sends an action to its socket receiving that action's
`result` message. Moves per second are counted from the first send to the last match's end, and
per whole second (steady: the median whole second, the first and the partial last one left out,
as load.js does). `sequential` mode (the single-client figure) sends a match's next action only
once the previous one's result has come back to its sender: one client, one move at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .http_bots import Created, create_match, failed
from .measure import latency_figures

SETUP_CONCURRENCY = 25  # creates and socket opens in flight at once (load.js: 25)
PLAY_TIMEOUT_S = 300.0  # load.js's default --timeout
STALL_S = 30.0  # no move answered for this long: the run is stuck
OPEN_RETRIES = 5  # a socket refused with 4404: the create may not be projected yet


@dataclass
class Book:
    """Latency bookkeeping of one run: when each action was sent, what came back, and how many
    moves were answered in each whole second since `started` (perf_counter seconds)."""

    started: float = 0.0
    sent: dict[str, float] = field(default_factory=dict)  # event id -> when it was sent
    latencies_ms: list[float] = field(default_factory=list)
    per_second: Counter = field(default_factory=Counter)
    moves: int = 0  # actions answered accepted
    failed: int = 0  # rejected, refused (an `error`), or a socket lost: that match stops
    pending: int = 0  # answered "pending" (no result within the gateway's wait)
    failures: list[str] = field(default_factory=list)
    last_answer: float = 0.0

    def send(self, event_id: str, now: float) -> None:
        self.sent[event_id] = now

    def answer(self, event_id: str, status: str, now: float, reason: object = None) -> float | None:
        """The `result` of `event_id` came at `now`: its latency (ms) when accepted, else None."""
        sent = self.sent.pop(event_id, None)
        if sent is None:
            return None
        self.last_answer = now
        if status == "pending":
            self.pending += 1
            return None
        if status != "accepted":
            failed(self, f"{event_id}: {status}{f' {reason}' if reason else ''}")  # the match cannot go on
            return None
        took = (now - sent) * 1000
        self.latencies_ms.append(took)
        self.moves += 1
        self.per_second[int(now - self.started)] += 1
        return took

    def steady(self, elapsed: float) -> float | None:
        """Moves in the median whole second, the first and the partial last left out; a play too
        short for one such second (the quick bench's, since sockets got faster): its mean rate."""
        bins = sorted(self.per_second.get(second, 0) for second in range(1, int(elapsed)))
        if bins:
            return float(bins[len(bins) // 2])
        return self.moves / elapsed if elapsed > 0 and self.moves else None


def figures_of(book: Book, elapsed: float, cpu_s: dict[str, float], prefix: str = "") -> dict[str, float]:
    """The scenario's figures of one play: moves/s (whole, steady), latency quantiles, failures and
    every process's CPU per move (µs; `cpu_s`: process name -> CPU seconds spent while playing)."""
    values = sorted(book.latencies_ms)
    figures = {
        "moves_per_s": book.moves / elapsed if elapsed > 0 else 0.0,
        "moves": float(book.moves),
        "failed": float(book.failed),
        "pending": float(book.pending),
        **latency_figures(values),
    }
    steady = book.steady(elapsed)
    if steady is not None:
        figures["steady_moves_per_s"] = steady
    if book.moves:
        figures.update(
            {f"{name.split('-')[0]}_cpu_us_per_move": seconds * 1e6 / book.moves for name, seconds in cpu_s.items()}
        )
    return {f"{prefix}{key}": value for key, value in figures.items()}


@dataclass(eq=False)
class Table:
    """One match of the run: its actions after the create as (seat, action), the next one to send,
    and the seq the match is at before them (the hellos say)."""

    match_id: str
    tokens: list[str]
    actions: list[tuple[int, dict]]
    sequential: bool = False
    base_seq: int | None = None
    next: int = 0
    seats: list[SeatClient] = field(default_factory=list)
    over: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    def of(cls, made: Created, records: list[dict], sequential: bool = False) -> Table:
        return cls(
            made.match_id, made.tokens, [(made.seat_of[r["player"]], r["action"]) for r in records[1:]], sequential
        )

    @property
    def final_seq(self) -> int:
        return (self.base_seq or 0) + len(self.actions)

    def stop(self) -> None:
        self.over.set()

    async def poke(self) -> None:
        """Let the seat whose action comes next send it, if what it has seen allows."""
        if self.next < len(self.actions) and not self.over.is_set():
            await self.seats[self.actions[self.next][0]].maybe_move()


class SeatClient:
    """One seat's socket: reads every message (a socket not read would be closed as too slow) and
    moves when it is its turn."""

    def __init__(self, table: Table, seat: int, book: Book):
        self.table, self.seat, self.book = table, seat, book
        self.socket: ClientConnection | None = None
        self.seen = 0  # the highest accepted seq this socket was told of
        self.waiting: str | None = None  # the event id of this socket's action in flight

    async def open(self, ws_url: str) -> None:
        url = f"{ws_url}/v1/matches/{self.table.match_id}/play"
        headers = {"Authorization": f"Bearer {self.table.tokens[self.seat]}"}
        for attempt in range(OPEN_RETRIES):
            socket = await connect(url, additional_headers=headers, open_timeout=30, close_timeout=5)
            hello = orjson.loads(await asyncio.wait_for(socket.recv(), 30))
            if hello.get("type") == "hello":
                self.socket, self.seen = socket, hello["seq"]
                if self.table.base_seq is None:
                    self.table.base_seq = hello["seq"]
                return
            await socket.close()
            if hello.get("code") != "unknown_match" or attempt == OPEN_RETRIES - 1:
                raise RuntimeError(f"seat socket of {self.table.match_id} seat {self.seat} refused: {hello}")
            await asyncio.sleep(0.2 * (attempt + 1))

    async def read(self) -> None:
        try:
            async for text in self.socket:
                await self.on_message(orjson.loads(text))
        except ConnectionClosed as closed:
            if not self.table.over.is_set():
                self._lost(f"socket closed: {closed}")

    async def on_message(self, message: dict) -> None:
        kind, status = message.get("type"), message.get("status")
        if kind == "result" and message.get("event_id") == self.waiting:
            self.waiting = None
            self.book.answer(message["event_id"], status, time.perf_counter(), message.get("reason"))
            if status not in ("accepted", "pending"):  # counted by the book: the match cannot go on
                return self.table.stop()
        elif kind == "error":
            return self._lost(f"error {message.get('code')}: {message.get('message')}")
        if kind in ("result", "update") and status == "accepted":
            self.seen = max(self.seen, message["seq"])
            if self.seen >= self.table.final_seq:
                return self.table.stop()
        await self.table.poke()  # the next action's seat: this one, or the other (whose turn may wait on this answer)

    def _lost(self, why: str) -> None:
        if self.waiting is not None:
            self.book.sent.pop(self.waiting, None)
            self.waiting = None
        failed(self.book, f"{self.table.match_id} seat {self.seat}: {why}")
        self.table.stop()

    def my_turn(self) -> bool:
        table = self.table
        if table.over.is_set() or table.next >= len(table.actions) or table.actions[table.next][0] != self.seat:
            return False
        if self.waiting is not None or self.seen < (table.base_seq or 0) + table.next:
            return False
        return not (table.sequential and any(s.waiting is not None for s in table.seats))

    async def maybe_move(self) -> None:
        if not self.my_turn():
            return
        table = self.table
        event_id = f"{table.match_id}.{table.next}"
        action = table.actions[table.next][1]
        table.next += 1
        self.waiting = event_id
        self.book.send(event_id, time.perf_counter())
        await self.socket.send(orjson.dumps({"action": action, "event_id": event_id}).decode())


async def _limited(jobs, limit: int) -> list:
    gate = asyncio.Semaphore(limit)

    async def one(job):
        async with gate:
            return await job

    return await asyncio.gather(*(one(job) for job in jobs))


async def set_up(
    base_url: str,
    operator_key: str,
    matches: list[list[bytes]],
    book: Book,
    sequential: bool = False,
    on_tick: Callable[[float], None] = lambda _: None,
) -> list[Table]:
    """Make the matches (HTTP) and open both seats' sockets of each; the tables, greeted."""
    decoded = [[orjson.loads(raw) for raw in match] for match in matches]
    async with httpx.AsyncClient(base_url=base_url, timeout=30.0, verify=False) as client:
        made = await _limited(
            [create_match(client, operator_key, records, n) for n, records in enumerate(decoded)], SETUP_CONCURRENCY
        )
    refused = [m for m in made if isinstance(m, str)]
    if refused:
        raise RuntimeError(f"{len(refused)} of {len(made)} creates failed, e.g. {refused[0]}")
    tables = [Table.of(m, records, sequential) for m, records in zip(made, decoded, strict=False)]
    ws_url = base_url.replace("http", "ws", 1)
    opened = 0

    async def open_one(client: SeatClient) -> None:
        nonlocal opened
        await client.open(ws_url)
        opened += 1
        on_tick(opened / (2 * len(tables)))

    for table in tables:
        table.seats = [SeatClient(table, seat, book) for seat in range(2)]
    await _limited([open_one(client) for table in tables for client in table.seats], SETUP_CONCURRENCY)
    return tables


async def close_all(tables: list[Table]) -> None:
    sockets = [client.socket for table in tables for client in table.seats if client.socket is not None]
    await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)


async def play(
    tables: list[Table],
    book: Book,
    on_tick: Callable[[float], None] = lambda _: None,
    timeout_s: float = PLAY_TIMEOUT_S,
) -> float:
    """Start the clock, send every match's first action and play until every match is over;
    returns the seconds from the first send to the end of the last match."""
    readers = [asyncio.create_task(client.read()) for table in tables for client in table.seats]
    total = sum(len(table.actions) for table in tables) or 1
    try:
        book.started = book.last_answer = time.perf_counter()
        for table in tables:
            await table.poke()
        while not all(table.over.is_set() for table in tables):
            now = time.perf_counter()
            if now - book.started > timeout_s:
                raise RuntimeError(f"the matches did not end within {timeout_s:g}s ({book.moves:,} moves)")
            if now - book.last_answer > STALL_S:
                stuck = sum(1 for table in tables if not table.over.is_set())
                raise RuntimeError(
                    f"no action answered for {STALL_S:g}s; {stuck} matches stuck, "
                    f"{book.moves:,} moves done, failures: {book.failures}"
                )
            check_readers(readers)
            on_tick(book.moves / total)
            await asyncio.sleep(0.05)
        return time.perf_counter() - book.started
    finally:
        await close_all(tables)
        for reader in readers:
            reader.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*readers, return_exceptions=True)


def check_readers(readers: list[asyncio.Task]) -> None:
    """Raise what a socket's reader raised (a bug, not a lost socket: those are counted)."""
    for reader in readers:
        if reader.done() and not reader.cancelled() and reader.exception() is not None:
            raise reader.exception()


async def closed_loop(
    base_url: str,
    operator_key: str,
    matches: list[list[bytes]],
    cpu: Callable[[], dict[str, float]],
    on_tick: Callable[[float], None] = lambda _: None,
) -> tuple[Book, float, dict[str, float]]:
    """All `matches` at once, two sockets each: (the book, the seconds played, the CPU seconds
    every process spent while they played)."""
    book = Book()
    tables = await set_up(base_url, operator_key, matches, book, on_tick=lambda f: on_tick(0.1 * f))
    try:
        before = cpu()
        elapsed = await play(tables, book, lambda f: on_tick(0.1 + 0.9 * f))
        after = cpu()
    finally:
        await close_all(tables)
    return book, elapsed, {name: after[name] - before[name] for name in before}


async def single_client(
    base_url: str, operator_key: str, matches: list[list[bytes]], on_tick: Callable[[float], None] = lambda _: None
) -> Book:
    """One client alone: the matches one after the other, both seats' sockets of each held by it,
    one action in flight at a time (the next sent once the previous one's result came back)."""
    book = Book()
    for number, match in enumerate(matches):
        tables = await set_up(base_url, operator_key, [match], book, sequential=True)
        await play(tables, book)
        on_tick((number + 1) / len(matches))
    return book
