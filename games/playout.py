"""Random legal playouts as move records: the bots of tests, benchmarks and the load generator.

Pure and seeded: the same arguments give the same records. Every record is folded as it is
made, so the bot always sees the position the service will see.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import orjson

from .fold import Replayer, Step
from .timeutil import from_ms

DEFAULT_START_MS = 1_795_989_600_000  # 2026-11-29T22:00:00Z


def move_record(
    match_id: str, player: str, action: dict[str, Any], event_id: str, at_ms: int, expected_seq: int | None = None
) -> bytes:
    data: dict[str, Any] = {
        "v": 1,
        "event_id": event_id,
        "match_id": match_id,
        "player": player,
        "at": from_ms(at_ms),
        "action": action,
    }
    if expected_seq is not None:
        data["expected_seq"] = expected_seq
    return orjson.dumps(data)


def random_playout_records(
    game: str,
    options: dict[str, Any],
    seed: int,
    match_id: str,
    players: tuple[str, str] = ("alice", "bob"),
    start_ms: int = DEFAULT_START_MS,
    step_ms: int = 1000,
    max_records: int = 5000,
    clock: dict[str, float] | None = None,
    rules: str | None = None,
) -> Iterator[tuple[bytes, Step]]:
    """Create a match (with `clock`, e.g. {"initial_s": 600, "increment_s": 5}, and `rules`, e.g.
    "strands/1", when given) and play random legal actions until it ends; yields (record, step)."""
    rng = random.Random(seed)
    replayer = Replayer()
    create: dict[str, Any] = {"type": "create", "game": game, "seats": list(players), "options": options}
    if clock is not None:
        create["clock"] = clock
    if rules is not None:
        create["rules"] = rules
    for n in range(max_records):
        if n == 0:
            player, action = players[0], create
        else:
            state = replayer.states[match_id]
            if state.status == "over":
                return
            seat = state.to_move()[0]
            seated, chosen = state.seats[seat], state.rules.random_action(state.board, seat, rng)
            if seated is None or chosen is None:
                raise RuntimeError(f"{game}: seat {seat} is to move but has no player or no action")
            player, action = seated, chosen
        raw = move_record(match_id, player, action, f"{match_id}-{n}", start_ms + n * step_ms)
        taken = replayer.feed(raw)
        if taken.result["status"] != "accepted":
            raise RuntimeError(f"{game}: the random bot's action was rejected: {taken.result['reason']} ({action})")
        yield raw, taken
    raise RuntimeError(f"{game} playout did not end within {max_records} records")
