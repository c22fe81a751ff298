"""Whole matches over seat sockets (GET /v1/matches/{id}/play) through the real stack: rules worker,
projector and gateway as processes on the real broker and Redis. Every result comes to each
socket exactly once and in seq order: its own actions' as `result`, the other seat's as `update`."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from tests.schema_check import check_result

from .gateway_stack import StreamReader, operator
from .socket_client import open_socket, receive

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


class Seat:
    """One seat's socket and every message it got, in order."""

    def __init__(self, url: str, match_id: str, token: str):
        self.socket = open_socket(url, match_id, token)
        self.messages: list[dict[str, Any]] = []
        self.sent: list[str] = []  # event ids of the actions sent
        self._read = 0

    def send(self, message: dict[str, Any]) -> None:
        if "event_id" in message:
            self.sent.append(message["event_id"])
        self.socket.send(orjson.dumps(message).decode())

    def next(self, wanted: Callable[[dict[str, Any]], bool], timeout: float = 30.0) -> dict[str, Any]:
        """The first message not looked at yet for which `wanted` is true (those before it are kept)."""
        deadline = time.monotonic() + timeout
        while True:
            for index in range(self._read, len(self.messages)):
                if wanted(self.messages[index]):
                    self._read = index + 1
                    return self.messages[index]
            self._read = len(self.messages)
            self.messages.append(receive(self.socket, max(0.1, deadline - time.monotonic())))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["type"] == kind]

    def drain(self, quiet_s: float = 1.0) -> None:
        """Read what is still coming until nothing has come for `quiet_s`."""
        try:
            while True:
                self.messages.append(receive(self.socket, quiet_s))
        except TimeoutError:
            pass


def record(message: dict[str, Any]) -> dict[str, Any]:
    """The result record a `result` or `update` message carries."""
    return {k: v for k, v in message.items() if k != "type"}


def test_two_sockets_play_a_strands_match_to_its_end(stack):
    created = stack.http.post(
        "/v1/matches",
        headers=operator(),
        json={"game": "strands", "seats": ["ann", "ben"], "options": {"layout": "small-4"}},
    ).json()
    match_id, tokens = created["match_id"], created["tokens"]
    watcher = StreamReader(stack.url, match_id, last_event_id=created["seq"]).start()
    seats = [Seat(stack.url, match_id, token) for token in tokens]
    try:
        for number, seat in enumerate(seats):
            hello = seat.next(lambda m: True)
            assert hello == {
                "type": "hello",
                "match_id": match_id,
                "seat": number,
                "player": ["ann", "ben"][number],
                "seq": created["seq"],
                "view": created["view"],
            }
        # out of turn: rejected, the answer to ben's socket and an update to ann's
        ben_early = {"action": {"type": "place", "cells": [[0, 0]]}, "event_id": "ben-early"}
        seats[1].send(ben_early)
        refused = seats[1].next(lambda m: m["type"] == "result")
        assert refused["status"] == "rejected" and refused["reason"]["code"] == "not_your_turn", refused
        assert record(seats[0].next(lambda m: m["type"] == "update")) == record(refused)
        rng, view, moves = random.Random(11), created["view"], 0
        while view["status"] != "over":
            mover = view["to_move"][0]
            seats[mover].send({"type": "legal_actions"})
            listing = seats[mover].next(lambda m: m["type"] == "legal_actions")
            assert listing["seat"] == mover and listing["seq"] == view["seq"] and listing["actions"], listing
            seats[mover].send(
                {"action": rng.choice(listing["actions"]), "expected_seq": view["seq"], "event_id": f"move-{moves}"}
            )
            mine = seats[mover].next(lambda m: m["type"] == "result")
            assert (
                mine["status"] == "accepted" and mine["seq"] == view["seq"] + 1 and mine["event_id"] == f"move-{moves}"
            )
            check_result(record(mine))
            theirs = seats[1 - mover].next(lambda m: m["type"] == "update" and m.get("status") == "accepted")
            assert record(theirs) == record(mine)
            if moves == 2:  # a retry of the same event: its duplicate result, to the mover alone
                seats[mover].send({"action": {"type": "resign"}, "event_id": f"move-{moves}"})
                again = seats[mover].next(lambda m: m["type"] == "result")
                assert again["duplicate"] is True and again["seq"] == mine["seq"] and again["events"] == []
            view, moves = mine["view"], moves + 1
        assert view["outcome"]["reason"] == "largest_group" and moves >= 4
        for seat in seats:
            seat.drain()
    finally:
        for seat in seats:
            seat.socket.close()
    final = stack.view(match_id)
    watcher.wait_for(lambda r: r.accepted_seqs() and r.accepted_seqs()[-1] == final["seq"])
    watcher.close()
    everything = list(range(created["seq"] + 1, final["seq"] + 1))
    assert watcher.accepted_seqs() == everything  # the SSE stream, unchanged, saw the same results
    for number, seat in enumerate(seats):
        accepted = [
            m
            for m in seat.messages
            if m["type"] in ("result", "update") and m["status"] == "accepted" and not m["duplicate"]
        ]
        assert [m["seq"] for m in accepted] == everything, number  # each once, in seq order
        assert all((m["type"] == "result") == (m["player"] == ["ann", "ben"][number]) for m in accepted)
        assert [m["event_id"] for m in seat.of("result")] == seat.sent  # one answer per action, in order
        assert not seat.of("error")
    assert sum(seat.sent.count("move-2") for seat in seats) == 2  # the retry, answered once more
    assert final["status"] == "over" and final == view
