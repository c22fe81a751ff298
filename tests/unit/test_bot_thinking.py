"""How the bot service shares its time (services/bots/thinking.py, progress.py): the fair gate
serves players round-robin and never lets one take every process, cancelled waiters give up their
place, decisions made in a worker process are the ones made in the service, and offsets are
committed only past turns that are done."""

from __future__ import annotations

import asyncio

import orjson

from services.bots.players import BOTS_ONLY, lane
from services.bots.progress import Progress
from services.bots.service import BotService, _Positions
from services.bots.thinking import FairGate, Thinker
from services.common.redis_keys import Keys
from services.common.settings import Settings
from tests.support import Match
from tests.unit.test_bot_service import KEY, public, strands_vs_bot


async def _hold(gate: FairGate, lane_name: str, order: list[str], release: asyncio.Event) -> None:
    async with gate.slot(lane_name):
        order.append(lane_name)
        await release.wait()


def test_waiting_players_are_served_round_robin_and_none_holds_every_slot():
    """Given 2 slots (1 per player) and a farm of 6 turns queued before a bystander's one, when
    slots free up, then the bystander is served second, not seventh."""

    async def run():
        gate, order, release = FairGate(slots=2, per_lane=1), [], asyncio.Event()
        farm = [asyncio.create_task(_hold(gate, "farmer", order, release)) for _ in range(6)]
        await asyncio.sleep(0)
        bystander = asyncio.create_task(_hold(gate, "bystander", order, release))
        await asyncio.sleep(0)
        started = list(order)
        release.set()
        await asyncio.gather(*farm, bystander)
        return started, order

    started, order = asyncio.run(run())
    assert started == ["farmer", "bystander"]  # the farm holds one slot of two; the other is free
    assert order[:2] == ["farmer", "bystander"] and order.count("farmer") == 6


def test_a_freed_slot_goes_to_the_next_player_in_turn():
    async def run():
        gate, order = FairGate(slots=1, per_lane=1), []
        releases = {name: asyncio.Event() for name in ("a1", "a2", "b1", "c1")}

        async def hold(lane_name: str, name: str) -> None:
            async with gate.slot(lane_name):
                order.append(name)
                await releases[name].wait()

        tasks = [asyncio.create_task(hold(n[0], n)) for n in ("a1", "a2", "b1", "c1")]
        for name in ("a1", "b1", "c1", "a2"):
            await asyncio.sleep(0)
            releases[name].set()
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(run()) == ["a1", "b1", "c1", "a2"]


def test_a_cancelled_waiter_gives_up_its_place_and_its_slot():
    async def run():
        gate, order, release = FairGate(slots=1, per_lane=1), [], asyncio.Event()
        first = asyncio.create_task(_hold(gate, "a", order, release))
        await asyncio.sleep(0)
        gone = asyncio.create_task(_hold(gate, "b", order, release))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
        later = asyncio.create_task(_hold(gate, "c", order, release))
        release.set()
        await asyncio.gather(first, later)
        return order, gate.busy, gate.waiting

    assert asyncio.run(run()) == (["a", "c"], 0, 0)


def test_a_decision_in_a_worker_process_is_the_one_made_in_the_service():
    """Seeded rng and a playout budget: the same move wherever it is decided; bot:random is decided
    without a worker (queued behind no search)."""
    match = strands_vs_bot()
    thinker = Thinker(["mcts-1", "random"], KEY, workers=1)
    try:
        turn = thinker.players.turns(match.view)[0]
        here = thinker.players.move(turn, public(match), match.view, 1)
        there = asyncio.run(thinker.move(lane(match.view), turn, public(match), match.view))
        assert there["action"] == here["action"] and there["event_id"] == here["event_id"]
    finally:
        thinker.close()
    assert thinker.players.searches("bot:mcts-1") and not thinker.players.searches("bot:random")
    assert not thinker.players.searches("bot:mcts-1", retry=True)  # the fallback is a random move


def test_the_lane_of_a_match_is_the_people_in_it():
    assert lane({"seats": ["ann", "bot:mcts-3"]}) == "ann"
    assert lane({"seats": [None, "bot:random"]}) == BOTS_ONLY == lane({"seats": ["bot:a", "bot:b"]})
    match = Match()
    match.create("strands", {"layout": "small-4"}, seats=("ben", "bot:mcts-1"))
    assert lane(match.view) == "ben"


def test_offsets_are_committed_up_to_the_oldest_turn_still_owed():
    progress = Progress()
    for offset in range(10):
        progress.read(0, offset)
    progress.owe(0, 3)
    progress.owe(0, 7)
    progress.read(1, 4)
    assert progress.to_commit() == {0: 3, 1: 5}
    progress.committed({0: 3, 1: 5})
    assert progress.to_commit() == {}  # nothing moved
    progress.paid(0, 3)
    assert progress.to_commit() == {0: 7}
    progress.paid(0, 7)
    assert progress.to_commit({0}) == {0: 10}
    progress.forget({0, 1})
    assert progress.to_commit() == {} and progress.owed() == 0


class _Recording(BotService):
    """The service's bookkeeping of owed turns, with the deciding and sending recorded instead."""

    def __init__(self):
        super().__init__(Settings.from_env(), Keys("t:", 3), Thinker(["mcts-1"], KEY, workers=1), "unit")
        self.positions = _Positions(lambda: None, None)
        self.played: list[int] = []

    async def _play_once(self, owed) -> None:
        self.played.append(owed.seq)
        await asyncio.Event().wait()  # "thinking" until replaced


def test_another_players_refused_action_leaves_the_owed_turn_and_a_newer_result_replaces_it():
    """Given the bot to move at seq 2, when ann's refused action (at seq 2) comes next, the turn is
    still owed (before, the newest result of a poll won, and a refused one hid the turn); when the
    match moves on (ann resigns, seq 3), the turn is given up and its offset may be committed."""
    match = strands_vs_bot()
    to_move = match.steps[-1].result
    refused = match.send("ann", {"type": "place", "cells": [[0, -2]]}).result
    assert refused["status"] == "rejected" and refused["view"]["seq"] == 2
    over = match.send("ann", {"type": "resign"}).result
    assert over["status"] == "accepted" and over["view"]["status"] == "over"

    async def run():
        service = _Recording()
        try:
            for offset, result in enumerate([to_move, refused]):
                service._take(0, offset, orjson.dumps(result))
            await asyncio.sleep(0)
            owed = service.owed[to_move["match_id"]]
            held = (owed.seq, owed.task.cancelled(), service.progress.to_commit())
            service._take(0, 2, orjson.dumps(over))
            await asyncio.sleep(0)
            return held, service.played, owed.task.cancelled(), service.owed, service.progress.to_commit()
        finally:
            service.thinker.close()

    held, played, cancelled, owed, commit = asyncio.run(run())
    assert held == (2, False, {0: 0}) and played == [2]
    assert cancelled and owed == {} and commit == {0: 3}
