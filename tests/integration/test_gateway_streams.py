"""The gateway's defences of its connections, on a gateway process with the real broker and Redis
(the projection written by the test): the client address behind proxies, the live-stream cap
taken atomically (Redis leases, shared by gateways, expiring with a dead one), clients that never
read, ping floods, request heads that never end. Each test prints the figure it measures."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator

import httpx
import orjson
import pytest

from services.gateway.tokens import SeatTokens
from tests.e2e.gateway_stack import SECRET, gateway_process

from .gateway_under_test import running_gateway
from .hostile_clients import (
    PING,
    closed_by_server,
    connect,
    event_stream_request,
    masked_frame,
    open_event_stream,
    open_seat_socket,
    read_frame,
    read_head,
    seat_socket_request,
    server_side_state,
    torn_down,
)
from .test_seat_socket import _Gateway

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
TOKENS = SeatTokens(SECRET.encode())
ADDRESS_BURST = 5  # identities one client address may make at once in these tests
STALL_S = 2  # PLYLOG_WRITE_STALL_S of these tests' gateways
MiB = 1024 * 1024


@pytest.fixture
def start(kafka_bootstrap, contract_topics, redis_db_url, redis_client, tmp_path) -> Iterator[Callable[..., _Gateway]]:
    """Starts gateways (each with topics and a Redis prefix of its own), stopped after the test."""
    with contextlib.ExitStack() as stack:
        count = iter(range(100))

        def started(**env: str) -> _Gateway:
            settings = {
                "PLYLOG_TIMEKEEPER_INTERVAL_S": "0",
                "PLYLOG_SOCKET_QUEUE": "8",
                "PLYLOG_ADDRESS_RATE_PER_S": "0.01",
                "PLYLOG_ADDRESS_RATE_BURST": str(ADDRESS_BURST),
                "PLYLOG_WRITE_STALL_S": str(STALL_S),
                **env,
            }
            home = tmp_path / f"gateway-{next(count)}"
            topics = contract_topics(partitions=2)
            return stack.enter_context(
                running_gateway(_Gateway, kafka_bootstrap, topics, 2, redis_db_url, redis_client, home, **settings)
            )

        yield started


def identities_made(gateway: _Gateway, forwarded_for: Callable[[int], str], tries: int = 30) -> int:
    """How many identities POST /v1/players makes, each request with its own X-Forwarded-For,
    before the first is refused (429)."""
    for n in range(tries):
        answer = gateway.http.post("/v1/players", json={"name": f"p{n}"}, headers={"X-Forwarded-For": forwarded_for(n)})
        if answer.status_code == 429:
            return n
        assert answer.status_code == 201, answer.text
    return tries


def test_a_made_up_x_forwarded_for_makes_nobody_a_new_client(start):
    """No proxy is trusted (the default): the header is the client's own writing and names nobody."""
    gateway = start()
    made = identities_made(gateway, lambda n: f"198.51.100.{n}")
    print(f"\nidentities made with a forged X-Forwarded-For each, before refusal: {made} (burst {ADDRESS_BURST})")
    assert made <= ADDRESS_BURST + 1, made


def test_behind_trusted_proxies_the_client_is_the_rightmost_hop_they_did_not_add(start):
    """Each trusted proxy appends the address it saw: what is left of the last one that is not a
    proxy, the client wrote. A client forging the left part stays one client."""
    gateway = start(PLYLOG_TRUSTED_PROXIES="127.0.0.1, 10.0.0.0/8")
    made = identities_made(gateway, lambda n: f"198.51.100.{n}, 203.0.113.7, 10.1.2.3")
    print(f"\nbehind two proxies, identities made with a forged first hop each, before refusal: {made}")
    assert made <= ADDRESS_BURST + 1, made
    other = gateway.http.post("/v1/players", json={"name": "x"}, headers={"X-Forwarded-For": "203.0.113.8, 10.1.2.3"})
    assert other.status_code == 201, other.text  # another client behind the same proxies
    assert gateway.http.post("/v1/players", json={"name": "y"}).status_code == 201  # the proxy itself


def open_at_once(gateway: _Gateway, match_id: str, kinds: list[str]) -> tuple[list[str], list]:
    """Opens len(kinds) live streams ("sse" or "socket") at once: every connection made first,
    then every request sent while the gateway is stopped (SIGSTOP), so that it finds them all
    at once when it goes on. What came of each ("open", or the error code), and the connections
    (open until closed)."""
    connections = [connect(gateway.url, rcvbuf=None) for _ in kinds]
    requests = [
        event_stream_request(match_id) if kind == "sse" else seat_socket_request(match_id, TOKENS.issue(match_id, 0))
        for kind in kinds
    ]
    time.sleep(0.5)  # accepted
    gateway.process.pause()
    try:
        for connection, request in zip(connections, requests, strict=True):
            connection.sendall(request)
    finally:
        gateway.process.resume()
    outcomes = []
    for connection, kind in zip(connections, kinds, strict=True):
        connection.settimeout(60)
        head = read_head(connection)
        if kind == "sse":
            outcomes.append("open" if head.startswith(b"HTTP/1.1 200") else head.split()[1].decode())
        else:
            assert head.startswith(b"HTTP/1.1 101"), head
            message = orjson.loads(read_frame(connection)[1])
            outcomes.append("open" if message["type"] == "hello" else message["code"])
    return outcomes, connections


def status_of_stream(url: str, match_id: str) -> int:
    """The status an SSE stream of `match_id` is answered with (the stream closed at once)."""
    with httpx.stream("GET", f"{url}/v1/matches/{match_id}/stream", timeout=10) as response:
        return response.status_code


def test_64_streams_opened_at_once_pass_a_cap_of_32_at_most_32_times(start):
    """SSE streams and seat sockets count together; the cap is taken before a response starts."""
    cap = 32
    gateway = start(PLYLOG_STREAMS_PER_CLIENT=str(cap))
    gateway.project("m-rush")
    outcomes, connections = open_at_once(gateway, "m-rush", ["sse", "socket"] * cap)
    for connection in connections:
        connection.close()
    opened = outcomes.count("open")
    print(f"\nstreams opened of {2 * cap} at once with a cap of {cap}: {opened} ({dict(Counter(outcomes))})")
    assert opened <= cap and outcomes.count("429") + outcomes.count("rate_limited") == 2 * cap - opened, outcomes
    deadline = time.monotonic() + 20  # closed streams give their places back
    while status_of_stream(gateway.url, "m-rush") != 200:
        assert time.monotonic() < deadline, "the closed streams still count"
        time.sleep(0.2)


def test_gateways_share_the_cap_and_a_dead_gateways_streams_stop_counting(
    start, kafka_bootstrap, redis_db_url, tmp_path
):
    first = start(PLYLOG_STREAMS_PER_CLIENT="2", PLYLOG_STREAM_LEASE_S="3")
    second_process, second_url = gateway_process(
        kafka_bootstrap,
        first.topics,
        redis_db_url,
        first.keys.prefix,
        tmp_path / "second",
        PLYLOG_STREAMS_PER_CLIENT="2",
        PLYLOG_STREAM_LEASE_S="3",
        PLYLOG_TIMEKEEPER_INTERVAL_S="0",
    )
    second_process.start()
    try:
        second_process.wait_ready(timeout=60)
        first.project("m-two")
        streams = [open_event_stream(first.url, "m-two"), open_event_stream(second_url, "m-two")]
        assert all(read_head(stream).startswith(b"HTTP/1.1 200") for stream in streams)
        assert status_of_stream(second_url, "m-two") == 429
        first.process.kill()  # its stream's lease is renewed no more
        started = time.monotonic()
        while status_of_stream(second_url, "m-two") == 429:
            assert time.monotonic() - started < 30, "the dead gateway's stream still counts"
            time.sleep(0.2)
        print(f"\na dead gateway's stream counted {time.monotonic() - started:.1f} s more (lease 3 s)")
    finally:
        second_process.stop()


def test_a_socket_that_never_reads_is_torn_down_and_counts_until_it_is_gone(start):
    gateway = start(PLYLOG_STREAMS_PER_CLIENT="2")
    gateway.project("m-deaf")
    gateway.project("m-quiet")
    port = int(gateway.url.rsplit(":", 1)[1])
    deaf = open_seat_socket(gateway.url, "m-deaf", TOKENS.issue("m-deaf", 0))
    with httpx.stream("GET", f"{gateway.url}/v1/matches/m-quiet/stream", timeout=10) as quiet:
        assert quiet.status_code == 200  # with the deaf socket: the cap of 2 is reached
        started = time.monotonic()
        for seq in range(2, 402):  # 12 MB it never reads
            gateway.publish("m-deaf", seq, pad=30_000)
        gone_after = reopened = None
        while reopened is None:
            assert time.monotonic() - started < 40, f"still {server_side_state(port, deaf)} after 40 s"
            admitted = status_of_stream(gateway.url, "m-quiet") == 200
            state = server_side_state(port, deaf)  # read after the probe: it was there when the probe came
            assert not (admitted and not torn_down(state)), f"no longer counted, though {state}"
            if gone_after is None and torn_down(state):
                gone_after = time.monotonic() - started
            if admitted:
                reopened = time.monotonic() - started
            time.sleep(0.2)
    print(f"\nnever-reading socket: its connection gone {gone_after:.1f} s after the first of 12 MB for it")
    deaf.close()


def test_an_event_stream_that_is_never_read_is_torn_down(start):
    gateway = start()
    gateway.project("m-deaf-sse")
    port = int(gateway.url.rsplit(":", 1)[1])
    deaf = open_event_stream(gateway.url, "m-deaf-sse")
    time.sleep(0.5)  # the stream is open
    started = time.monotonic()
    for seq in range(2, 402):
        gateway.publish("m-deaf-sse", seq, pad=30_000)
    while not torn_down(state := server_side_state(port, deaf)):
        assert time.monotonic() - started < 40, f"still {state} after 40 s"
        time.sleep(0.2)
    print(f"\nnever-read event stream: its connection gone {time.monotonic() - started:.1f} s after the first of 12 MB")
    deaf.close()


def test_a_ping_flood_closes_the_socket_and_the_gateway_does_not_grow(start):
    gateway = start()
    gateway.project("m-ping")
    port = int(gateway.url.rsplit(":", 1)[1])
    flooder = open_seat_socket(gateway.url, "m-ping", TOKENS.issue("m-ping", 0))
    before = gateway.process.rss_bytes()
    pings = 400_000  # each with the most a control frame carries, which its pong echoes
    with contextlib.suppress(OSError):  # reset by the gateway, or it stopped reading
        flooder.sendall(masked_frame(PING, b"p" * 125) * pings)
    time.sleep(1.0)
    growth = gateway.process.rss_bytes() - before
    print(f"\ngateway RSS growth under a flood of {pings} pings: {growth / MiB:.1f} MiB")
    assert growth < 16 * MiB, f"{growth / MiB:.1f} MiB"
    deadline = time.monotonic() + 20
    while not torn_down(state := server_side_state(port, flooder)):
        assert time.monotonic() < deadline, f"the flooding socket is still {state}"
        time.sleep(0.2)
    flooder.close()
    assert gateway.http.get("/healthz").status_code == 200


def test_request_heads_that_never_end_are_closed_within_the_head_timeout(start):
    """Slowloris: 24 connections trickle a header line a second and never end the head; 8 send
    nothing at all. The head timeout (PLYLOG_HEAD_TIMEOUT_S, 5 s by default) closes each."""
    gateway = start()
    trickling = [connect(gateway.url, rcvbuf=None) for _ in range(24)]
    silent = [connect(gateway.url, rcvbuf=None) for _ in range(8)]
    for connection in trickling:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n")
    started = time.monotonic()
    while time.monotonic() - started < 15:
        for n, connection in enumerate(trickling):
            if not closed_by_server(connection):
                with contextlib.suppress(OSError):
                    connection.sendall(f"X-Slow-{n}: {time.monotonic():.0f}\r\n".encode())
        time.sleep(1.0)
    still_open = sum(not closed_by_server(connection) for connection in trickling + silent)
    print(f"\nincomplete request heads still open 15 s after they began: {still_open} of 32")
    for connection in trickling + silent:
        connection.close()
    assert still_open == 0
    assert gateway.http.get("/healthz").status_code == 200


def test_request_bodies_trickled_byte_by_byte_are_cut_off_within_the_body_timeout(start):
    """Slow bodies: 8 connections declare a 200-byte body and send a byte every half second. The
    body timeout (PLYLOG_BODY_TIMEOUT_S, here 1 s) answers each with 408 and closes it."""
    gateway = start(PLYLOG_BODY_TIMEOUT_S="1")
    head = (
        b"POST /v1/players HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
    )
    trickling = [connect(gateway.url, rcvbuf=None) for _ in range(8)]
    for connection in trickling:
        connection.sendall(head + b'{"name": ')
    started = time.monotonic()
    while time.monotonic() - started < 8:
        for connection in trickling:
            if not closed_by_server(connection):
                with contextlib.suppress(OSError):
                    connection.sendall(b" ")
        time.sleep(0.5)
    still_open = sum(not closed_by_server(connection) for connection in trickling)
    answer = read_head(trickling[0])
    print(f"\ntrickled request bodies still open 8 s after they began: {still_open} of 8")
    for connection in trickling:
        connection.close()
    assert still_open == 0
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert gateway.http.get("/healthz").status_code == 200
