"""The AsyncAPI document of the default installation, with examples taken from real folds.

A fixed seeded playout of every game, with a turn taken out of order and, for one game, a
retried create, goes through the rules worker's own batch logic (`RulesCore.fold_batch`) on
the home partitions of the default installation, as does one unreadable record. So every
example is a record the worker writes, byte for byte, and the examples are the same on every
run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import orjson

from games.playout import move_record, random_playout_records
from games.timeutil import to_ms
from schemas.asyncapi import Example, Installation, asyncapi_document, message_key, render
from schemas.base import GAME_NAMES
from services.common.kafka_partition import partition_of
from services.common.settings import DEFAULT_PARTITIONS, DEFAULT_TOPIC_PREFIX, Topics
from services.rules.core import Incoming, Outgoing, RulesCore

EXAMPLE_SEED = 2026
EXAMPLE_OPTIONS: dict[str, dict[str, Any]] = {
    "mastermind": {"pegs": 4, "colors": 6, "max_rows": 6},
    "strands": {"layout": "small-4"},
    "mana": {"max_plies": 40},
    "mind_ninja": {"side": 4},
}
DUPLICATE_GAME = "strands"
UNREADABLE = (b"m-example-garbage", b'{"v": 1, "event_id": "e-1", "match_id": ')


def default_installation() -> Installation:
    """The default installation (prefix `plylog.`, 12 partitions), with its examples."""
    topics = Topics(DEFAULT_TOPIC_PREFIX)
    return Installation(
        prefix=topics.prefix,
        moves=topics.moves,
        results=topics.results,
        outcomes=topics.outcomes,
        deadletter=topics.deadletter,
        changelog=topics.rules_changelog,
        partitions=DEFAULT_PARTITIONS,
        examples=contract_examples(DEFAULT_PARTITIONS, topics.moves),
    )


def asyncapi_yaml() -> str:
    """The text of schemas/asyncapi.yaml."""
    return render(asyncapi_document(default_installation()))


def example_match_id(game: str) -> str:
    return f"m-example-{game.replace('_', '-')}"


def game_log(game: str) -> list[bytes]:
    """The move records of the game's example match: its playout, plus a move by the seat not
    to move right after the start (rejected `not_your_turn`) and, for DUPLICATE_GAME, the create
    sent again at the end (a duplicate)."""
    match_id = example_match_id(game)
    records = [raw for raw, _ in random_playout_records(game, EXAMPLE_OPTIONS[game], EXAMPLE_SEED, match_id)]
    first_move = orjson.loads(records[1])
    records.insert(2, move_record(match_id, "bob", first_move["action"], f"{match_id}-early", to_ms(first_move["at"])))
    if game == DUPLICATE_GAME:
        records.append(records[0])
    return records


def worker_output(partitions: int, moves_topic: str) -> tuple[list[Incoming], list[Outgoing]]:
    """Every example move record on its home partition, and what the rules worker sends for them."""
    offsets: dict[int, int] = defaultdict(int)
    incoming = []
    logs = [(example_match_id(game).encode(), raw) for game in GAME_NAMES for raw in game_log(game)]
    for key, value in [*logs, UNREADABLE]:
        partition = partition_of(key, partitions)
        incoming.append(Incoming(key, value, partition, offsets[partition], moves_topic))
        offsets[partition] += 1
    batch = RulesCore(partitions).fold_batch(incoming, lambda key: None)
    return incoming, batch.sends


def contract_examples(partitions: int, moves_topic: str) -> dict[str, list[Example]]:
    """Message key (as in the AsyncAPI document) -> examples."""
    incoming, sends = worker_output(partitions, moves_topic)
    examples: dict[str, list[Example]] = {}
    for game in GAME_NAMES:
        match_id = example_match_id(game)
        moves = [rec for rec in incoming if rec.key == match_id.encode()]
        results = [orjson.loads(s.value) for s in sends if s.kind == "results" and s.key == match_id.encode()]
        outcomes = [orjson.loads(s.value) for s in sends if s.kind == "outcomes" and s.key == match_id.encode()]
        examples[message_key(game, "Move")] = list(_move_examples(moves))
        examples[message_key(game, "Result")] = list(_result_examples(results))
        examples[message_key(game, "Outcome")] = [
            _example("end", "the outcome record of the example match", outcomes[0])
        ]
    letters = [orjson.loads(s.value) for s in sends if s.kind == "deadletter"]
    examples["deadLetter"] = [_example("unreadable", "a record cut short: not JSON", letters[0])]
    return examples


def _example(name: str, summary: str, payload: dict[str, Any]) -> Example:
    return {"name": name, "summary": summary, "payload": payload}


def _move_examples(moves: list[Incoming]) -> Iterator[Example]:
    where = f"key {moves[0].key.decode()}, home partition {moves[0].partition}"
    yield _example("create", f"creates the match ({where})", orjson.loads(moves[0].value))
    yield _example("firstMove", f"the first game action, offset {moves[1].offset}", orjson.loads(moves[1].value))


def _result_examples(results: list[dict[str, Any]]) -> Iterator[Example]:
    yield _example("created", "the create's result: the match is created and, both seats named, started", results[0])
    yield _example("firstMove", "the first game action, accepted", results[1])
    rejected = next(r for r in results if r["status"] == "rejected")
    yield _example("notYourTurn", "a move by the seat that is not to move, rejected", rejected)
    ended = next(r for r in results if any(e["type"] == "match_ended" for e in r["events"]))
    yield _example("ended", "the move that ended the match: the view has its outcome", ended)
    for result in results:
        if result["duplicate"]:
            yield _example("duplicate", "the create sent again after the end: a duplicate, nothing changes", result)
