"""The `ws` bench scenario's pure parts (bench/ws_bots.py): the latency bookkeeping, the figures of
one play, who moves when on the two sockets of a match (fake sockets, no gateway; then real ones on
a loopback stand-in of the seat endpoint), and how its figures feed the report's summary
(bench/figures.py), with the HTTP bots as the fallback."""

from __future__ import annotations

import asyncio
import os

import orjson
import pytest

from bench import runner
from bench.figures import FIGURES, RATIOS, SUMMARY, derive, summary_of, summary_sources
from bench.http_bots import Created
from bench.scenarios import cpu_budget
from bench.ws_bots import Book, SeatClient, Table, figures_of, play


# --- the book ------------------------------------------------------------------------------------
def test_the_book_times_each_action_to_its_result_and_counts_the_rest():
    book = Book(started=100.0)
    book.send("a", 100.2)
    book.send("b", 100.5)
    book.send("c", 101.0)
    book.send("d", 101.1)
    assert book.answer("a", "accepted", 100.25) == pytest.approx(50.0)
    assert book.answer("b", "pending", 110.0) is None
    assert book.answer("c", "rejected", 101.2) is None
    assert book.answer("never-sent", "accepted", 101.3) is None  # not this book's: ignored
    assert book.answer("a", "accepted", 102.0) is None  # answered once only
    assert book.answer("d", "accepted", 102.6) == pytest.approx(1500.0)
    assert (book.moves, book.pending, book.failed) == (2, 1, 1)
    assert book.latencies_ms == [pytest.approx(50.0), pytest.approx(1500.0)]
    assert book.per_second == {0: 1, 2: 1}  # whole seconds since `started`, by the answer's time
    assert book.sent == {} and book.last_answer == 102.6
    assert book.failures == ["c: rejected"]


def test_steady_is_the_median_whole_second_without_the_first_and_the_partial_last():
    book = Book()
    book.per_second.update({0: 5, 1: 100, 2: 300, 3: 200, 4: 7})
    assert book.steady(4.9) == 200  # seconds 1, 2, 3 (4 is partial): 100, 200, 300
    assert book.steady(4.0) == 200  # seconds 1..3 again
    assert book.steady(3.5) == 300  # seconds 1, 2: the upper median, as load.js takes it
    assert book.steady(1.9) is None  # no whole second but the first, and no move counted
    book.moves = 380
    assert book.steady(1.9) == pytest.approx(200.0)  # then the play's mean rate
    empty = Book()
    assert empty.steady(3.2) == 0  # seconds with no answer count as 0


def test_figures_of_one_play():
    book = Book(started=0.0)
    for n, ms in enumerate((10.0, 20.0, 30.0, 40.0)):
        book.send(str(n), 1.0 + n)
        book.answer(str(n), "accepted", 1.0 + n + ms / 1000)
    figures = figures_of(book, 4.5, {"gateway": 0.002, "rules-1": 0.004, "projector": 0.001})
    assert figures["moves_per_s"] == pytest.approx(4 / 4.5)
    assert (figures["moves"], figures["failed"], figures["pending"]) == (4, 0, 0)
    assert figures["p50_ms"] == pytest.approx(20.0) and figures["p99_ms"] == figures["max_ms"] == pytest.approx(40.0)
    assert figures["steady_moves_per_s"] == 1  # seconds 1, 2, 3: one each
    assert figures["gateway_cpu_us_per_move"] == pytest.approx(500.0)
    assert figures["rules_cpu_us_per_move"] == pytest.approx(1000.0)
    assert figures["projector_cpu_us_per_move"] == pytest.approx(250.0)
    short = figures_of(book, 1.5, {"gateway": 1.0}, prefix="single_")
    assert short["single_steady_moves_per_s"] == short["single_moves_per_s"]  # too short: the mean rate
    assert short["single_p50_ms"] == pytest.approx(20.0)
    nothing = figures_of(Book(), 2.0, {"gateway": 1.0})
    assert nothing["moves_per_s"] == 0 and "gateway_cpu_us_per_move" not in nothing and "p50_ms" not in nothing


# --- who moves when ------------------------------------------------------------------------------
class FakeSocket:
    def __init__(self, sent: list):
        self.sent = sent

    async def send(self, text: str) -> None:
        self.sent.append(orjson.loads(text))


def _table(seats_in_order: list[int], sequential: bool = False) -> tuple[Table, list]:
    records = [
        {"player": "alice", "action": {"type": "create"}},
        *[{"player": ("alice", "bob")[seat], "action": {"n": n}} for n, seat in enumerate(seats_in_order)],
    ]
    table = Table.of(Created("m-1", ["t0", "t1"], {"alice": 0, "bob": 1}), records, sequential)
    sent: list = []
    book = Book()
    table.seats = [SeatClient(table, seat, book) for seat in range(2)]
    for client in table.seats:
        client.socket = FakeSocket(sent)
        client.seen = 1  # the hellos: the match at seq 1, after its create
    table.base_seq = 1
    return table, sent


def accepted(kind: str, seq: int, event_id: str = "other") -> dict:
    return {"type": kind, "status": "accepted", "seq": seq, "event_id": event_id}


def test_a_client_moves_when_its_own_socket_says_it_is_its_turn():
    async def go():
        table, sent = _table([0, 1, 1, 0])
        a, b = table.seats
        assert table.actions == [(0, {"n": 0}), (1, {"n": 1}), (1, {"n": 2}), (0, {"n": 3})]
        await table.poke()  # the clock starts: seat 0 has the first action
        assert sent == [{"action": {"n": 0}, "event_id": "m-1.0"}] and a.waiting == "m-1.0"
        await a.on_message(accepted("result", 2, "m-1.0"))  # seat 0's answer: seat 1 has not seen it yet
        assert len(sent) == 1 and a.waiting is None and a.book.moves == 1
        await b.on_message(accepted("update", 2))  # now it has: it moves
        assert sent[-1]["event_id"] == "m-1.1"
        await a.on_message(accepted("update", 3))  # seat 0 sees seat 1's move; seat 1 moves next, not yet told
        assert len(sent) == 2
        await b.on_message(accepted("result", 3, "m-1.1"))  # its own result: it moves again
        assert sent[-1]["event_id"] == "m-1.2"
        await b.on_message(accepted("result", 4, "m-1.2"))
        assert len(sent) == 3  # seat 0's turn, seat 0 not told yet
        await a.on_message(accepted("update", 4))
        assert sent[-1]["event_id"] == "m-1.3" and not table.over.is_set()
        await a.on_message(accepted("result", 5, "m-1.3"))
        assert table.over.is_set() and a.book is b.book and a.book.moves == 4  # one book for the run
        assert a.book.sent == {} and len(a.book.latencies_ms) == 4

    asyncio.run(go())


def test_an_update_that_comes_before_the_answer_lets_the_other_seat_move_unless_sequential():
    async def go(sequential: bool) -> int:
        table, sent = _table([0, 1], sequential)
        a, b = table.seats
        await table.poke()
        await b.on_message(accepted("update", 2))  # seat 1 is told before seat 0 has its answer
        before_answer = len(sent)
        await a.on_message(accepted("result", 2, "m-1.0"))
        assert len(sent) == 2  # in both modes seat 1 has moved by now
        return before_answer

    assert asyncio.run(go(False)) == 2
    assert asyncio.run(go(True)) == 1  # one client: the next move waits for the previous answer


def test_a_rejection_or_an_error_stops_the_match_and_is_counted():
    async def go(message: dict) -> tuple[Table, list]:
        table, sent = _table([0, 1])
        await table.poke()
        await table.seats[0].on_message(message)
        return table, sent

    table, sent = asyncio.run(
        go({"type": "result", "status": "rejected", "event_id": "m-1.0", "reason": {"code": "illegal"}})
    )
    assert table.over.is_set() and table.seats[0].book.failed == 1 and len(sent) == 1
    assert table.seats[0].book.failures == ["m-1.0: rejected {'code': 'illegal'}"]
    table, sent = asyncio.run(go({"type": "error", "code": "unavailable", "message": "Redis", "event_id": "m-1.0"}))
    assert table.over.is_set() and table.seats[0].book.failed == 1 and table.seats[0].book.sent == {}


def test_a_pending_answer_leaves_the_match_to_its_later_update():
    async def go():
        table, sent = _table([0, 0])
        a, _ = table.seats
        await table.poke()
        await a.on_message({"type": "result", "status": "pending", "event_id": "m-1.0"})
        assert len(sent) == 1 and a.waiting is None and a.book.pending == 1
        await a.on_message(accepted("update", 2, "m-1.0"))  # its own late result, as an update
        assert sent[-1]["event_id"] == "m-1.1"

    asyncio.run(go())


# --- into the report -----------------------------------------------------------------------------
def _summary(**figures: float) -> dict:
    return {"figures": {k: {"median": v, "min": v, "max": v, "runs": [v]} for k, v in figures.items()}}


def test_the_ws_scenario_is_known_and_its_figures_are_tabled():
    assert "ws" in runner.SCENARIOS and runner.plan(["ws"]) == ["ws"]
    assert list(runner.SCENARIOS).index("ws") == list(runner.SCENARIOS).index("http") + 1
    keys = {f.key for f in FIGURES if f.scenario == "ws"}
    assert {
        "moves_per_s",
        "steady_moves_per_s",
        "vs_peer",
        "p50_ms",
        "p99_ms",
        "gateway_cpu_us_per_move",
        "single_p50_ms",
        "single_p99_ms",
    } <= keys
    assert ("ws", "moves_per_s", "peer", "moves_per_s", "vs_peer") in RATIOS


def test_the_cpu_budget_is_the_rate_every_core_busy_at_the_measured_cost_per_move():
    cores = len(os.sched_getaffinity(0))
    budget = cpu_budget(machine_s=8.0, seconds=5.0, moves=10_000)  # 800 us of the machine a move
    assert budget["cores_busy"] == pytest.approx(1.6)
    assert budget["cpu_bound_moves_per_s"] == pytest.approx(cores * 1_250)
    assert cpu_budget(0.0, 5.0, 10_000) == {} and cpu_budget(8.0, 5.0, 0) == {}  # nothing measured: no figure
    derived = {"ws": _summary(cpu_bound_moves_per_s=2_500.0), "peer": _summary(moves_per_s=5_000.0)}
    derive(derived)
    assert summary_of(derived)["client_cpu_bound_vs_peer"] == pytest.approx(0.5)


def test_the_client_summary_comes_from_ws_when_it_ran_else_from_http():
    both = {
        "ws": _summary(moves_per_s=900.0, single_p50_ms=4.0),
        "http": _summary(moves_per_s=450.0),
        "peer": _summary(moves_per_s=1500.0),
    }
    derive(both)
    summary = summary_of(both)
    assert summary["client_moves_per_s"] == 900.0
    assert summary["client_vs_peer"] == pytest.approx(0.6)
    assert summary["single_client_p50_ms"] == 4.0
    assert summary_sources(both)["client_moves_per_s"] == "ws.moves_per_s"
    assert set(summary) == set(SUMMARY)

    http_only = {"http": _summary(moves_per_s=450.0), "peer": _summary(moves_per_s=1500.0)}
    derive(http_only)
    summary = summary_of(http_only)
    assert summary["client_moves_per_s"] == 450.0 and summary["client_vs_peer"] == pytest.approx(0.3)
    assert summary["single_client_p50_ms"] is None  # no fallback: one client alone is only measured by ws
    sources = summary_sources(http_only)
    assert sources["client_vs_peer"] == "http.vs_peer" and sources["single_client_p50_ms"] is None

    failed_ws = {
        "ws": {"figures": {"moves_per_s": {"median": None, "min": None, "max": None, "runs": []}}},
        "http": _summary(moves_per_s=450.0),
    }
    assert summary_of(failed_ws)["client_moves_per_s"] == 450.0  # every ws run failed: http's is the number
    assert summary_of({})["client_moves_per_s"] is None


# --- the sockets, on a loopback stand-in of the seat endpoint ------------------------------------
def test_play_runs_matches_to_their_end_over_real_sockets():
    """SeatClient.open / play on `websockets` against a tiny server that answers like the gateway
    (hello; each action's result to its socket, an update to the other seat's)."""
    from websockets.asyncio.server import serve

    matches: dict[str, dict] = {}

    async def handler(connection):
        match_id = connection.request.path.split("/")[3]
        seat = int(connection.request.headers["Authorization"][-1])
        match = matches.setdefault(match_id, {"seq": 1, "sockets": {}})
        match["sockets"][seat] = connection
        await connection.send(orjson.dumps({"type": "hello", "seq": match["seq"], "seat": seat}).decode())
        async for text in connection:
            action = orjson.loads(text)
            match["seq"] += 1
            answer = {"status": "accepted", "seq": match["seq"], "event_id": action["event_id"]}
            await connection.send(orjson.dumps({"type": "result", **answer}).decode())
            other = match["sockets"].get(1 - seat)
            if other is not None:
                await other.send(orjson.dumps({"type": "update", **answer}).decode())

    async def go(sequential: bool) -> Book:
        async with serve(handler, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            book = Book()
            tables = []
            for n, order in enumerate(([0, 1, 0, 1, 1, 0], [0, 0, 1])):
                records = [
                    {"player": "a", "action": {}},
                    *[{"player": "ab"[s], "action": {"n": i}} for i, s in enumerate(order)],
                ]
                table = Table.of(Created(f"m{n}{sequential:d}", ["t0", "t1"], {"a": 0, "b": 1}), records, sequential)
                table.seats = [SeatClient(table, seat, book) for seat in range(2)]
                for client in table.seats:
                    await client.open(f"ws://127.0.0.1:{port}")
                tables.append(table)
            elapsed = await asyncio.wait_for(play(tables, book), 20)
            assert elapsed > 0 and all(t.over.is_set() for t in tables)
            return book

    for sequential in (False, True):
        book = asyncio.run(go(sequential))
        assert (book.moves, book.failed, book.pending, book.sent) == (9, 0, 0, {})
        assert len(book.latencies_ms) == 9 and all(ms >= 0 for ms in book.latencies_ms)
