"""The rules worker's pipeline in an in-memory world (tests/unit/rules_world.py), with no broker:
killed at every step, rebalanced at every step, refused by Kafka, it loses no record, applies none
twice, never moves a position back, and sends no outcome before its result. A pipeline whose
steps come in another order breaks one of these (the last tests: the world is a test that fails)."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from services.rules.core import Batch, Outgoing
from services.rules.pipeline import Pipeline, merged
from services.rules.produce import replacement
from tests.unit.rules_world import Refused, World, run


@functools.cache
def steps(owners: tuple[tuple[int, str], ...] = ()) -> int:
    """The steps of an uninterrupted run of the world whose partitions have these owners."""
    clean = World(owners=dict(owners))
    assert run(clean, names=sorted({"A", *dict(owners).values()})) == []
    return clean.steps


def failures(worlds: list[World]) -> dict[str, list[str]]:
    """What broke, by the step it happened at, for every world that broke something."""
    broken = {}
    for world in worlds:
        problems = run(world)
        if problems:
            at = world.crash_at or min(world.rebalance_at, default=0)
            broken[world.trail[at - 1] if 0 < at <= len(world.trail) else f"step {at}"] = problems[:3]
    return broken


@pytest.mark.parametrize("unacknowledged", ["lost", "kept", "alternate"])
def test_a_worker_killed_at_any_step_and_restarted_loses_nothing_and_applies_nothing_twice(unacknowledged):
    """Killed at every step in turn (what it sent and Kafka had not acknowledged lost, kept, or
    every other one kept), then started again on what Kafka has."""
    worlds = [World(crash_at=at, unacknowledged=unacknowledged) for at in range(1, steps() + 1)]
    assert failures(worlds) == {}
    assert all(world.killed == "A" for world in worlds)
    assert sum(world.starts == 2 for world in worlds) > len(worlds) / 2  # restarted when the work was not done


def test_a_rebalance_at_any_step_drops_the_batches_not_stored():
    """The worker keeps its partitions, but batches of the old generation are not stored: their
    records come again from the committed offsets and are answered again, the same."""
    worlds = [World(rebalance_at={at: {}}) for at in range(1, steps() + 1)]
    assert failures(worlds) == {}


@pytest.mark.parametrize("back_after", [4, 25])
def test_a_partition_moving_to_another_worker_and_back_at_any_step(back_after):
    """Partition 1 goes from A to B at some step, and back to A a few (or many) steps later,
    while batches of both are in flight; each takes it over from what Kafka has."""
    owners = {2: "B"}
    total = steps(tuple(owners.items()))
    worlds = [
        World(owners=owners, rebalance_at={at: {1: "B"}, at + back_after: {1: "A"}}) for at in range(1, total + 1, 3)
    ]
    for world in worlds:
        assert run(world, names=("A", "B")) == [], world.trail[min(world.rebalance_at) - 1]


def test_a_crash_of_one_of_two_workers_while_a_partition_moves():
    owners = {2: "B"}
    total = steps(tuple(owners.items()))
    for at in range(1, total + 1, 3):
        world = World(owners=owners, crash_at=at + 3, rebalance_at={at: {1: "B"}})
        assert run(world, names=("A", "B")) == [], world.trail[at - 1]


def test_a_result_kafka_refuses_for_its_size_becomes_a_dead_letter_and_the_rest_goes_on():
    def refused(out: Outgoing) -> bool:
        return out.kind == "results" and out.cause is not None and (out.cause.partition, out.cause.offset) == (1, 3)

    def expected(out: Outgoing) -> Outgoing | None:
        return replacement(out, Refused(f"{len(out.value)} bytes")) if refused(out) else None

    world = World(refuse=refused)
    assert run(world, replace=expected) == [] and world.starts == 1  # no restart: the worker goes on
    assert [a.kind for a in world.answers[(1, 3)]] == ["deadletter"]


@pytest.mark.parametrize("nth", [1, 5, 12])
def test_kafka_failing_a_batch_stops_the_worker_and_a_restart_answers_it_again(nth):
    world = World(fail_send=nth)
    assert run(world) == []
    assert world.starts == 2  # the batch failed, the worker stopped, the next one answered it


# --- the order of the steps matters: pipelines with two steps swapped break a promise ---------------
class StatesBeforeResultsAcknowledged(Pipeline):
    """Stores each batch's states as soon as it is queued, before its results are acknowledged."""

    async def store(self, group: list[Any]) -> None:
        for flight in group:
            for key, (value, partition) in flight.batch.state_writes().items():
                self.table.store(key, value, partition)
        await super().store(group)


class PositionsBeforeStatesAcknowledged(Pipeline):
    """Stores positions right after the states, not once Kafka has the states."""

    async def store(self, group: list[Any]) -> None:
        for flight in group:
            for partition, offset in flight.batch.positions().items():
                self.positions.store(partition, offset)
        await super().store(group)


class OutcomesWithResults(Pipeline):
    """Sends a batch's outcomes with its results, not once the results are acknowledged."""

    @staticmethod
    def sent_at_once(batch: Batch) -> list[Outgoing]:
        return batch.sends

    @staticmethod
    def sent_once_acknowledged(batch: Batch) -> list[Outgoing]:
        return []


async def commit_before_positions_acknowledged(positions: Any, group: Any) -> bool:
    """Commits just after the stored positions without waiting for Kafka to have them."""
    offsets = {p: positions.position(p) + 1 for p in group.owned() if positions.position(p) >= 0}
    return bool(offsets) and await group.commit(offsets)


@pytest.mark.parametrize(
    "world",
    [
        {"pipeline": StatesBeforeResultsAcknowledged},
        {"pipeline": PositionsBeforeStatesAcknowledged},
        {"pipeline": OutcomesWithResults},
        {"commit": commit_before_positions_acknowledged},
    ],
    ids=lambda world: next(iter(world.values())).__name__,
)
def test_a_pipeline_with_two_steps_swapped_breaks_a_promise(world):
    broken = None
    for at in range(1, steps() + 1):
        crashed = World(crash_at=at, **world)
        if run(crashed):
            broken = at
            break
    assert broken is not None, "no crash found the swapped steps"


def test_merged_writes_keep_each_keys_last_value():
    assert merged([{b"a": 1, b"b": 2}, {b"a": 3}]) == {b"a": 3, b"b": 2}
