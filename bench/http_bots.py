"""HTTP bots: play pre-generated random matches through the gateway, as clients do.

Each bot creates a match (`POST /v1/matches`, two players of its own, so the per-player rate
limit is not what is measured), then submits the match's actions one after the other with
`POST /v1/matches/{id}/actions?wait=true` and the seat's token: every request returns once the
result is applied, so a bot is closed-loop and the latency is request -> applied result.
The actions come from the bots of `games.playout`: the gateway sends the same create, so the
same actions are legal in the same order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import orjson


@dataclass
class HttpTally:
    moves: int = 0  # accepted results: creates and actions
    failed: int = 0  # non-2xx answers or rejected actions (the bot leaves that match)
    latencies_ms: list[float] = field(default_factory=list)  # of the action requests
    failures: list[str] = field(default_factory=list)


@dataclass
class Created:
    """A match made from a pre-generated one: its id, the seat tokens, and the seat of each of the
    pre-generated records' players (the records name their own players; the match has the bot's)."""

    match_id: str
    tokens: list[str]
    seat_of: dict[str, int]


async def create_match(client: httpx.AsyncClient, operator_key: str, records: list[dict], bot: int) -> Created | str:
    """`POST /v1/matches` with the create of `records` (decoded move records, the create first) for
    two players of bot number `bot`; the match made, or why not (one line)."""
    create = records[0]["action"]
    players = [f"bench-{bot}-{seat}" for seat in range(len(create["seats"]))]
    made = await client.post(
        "/v1/matches",
        json={"game": create["game"], "seats": players, "options": create["options"]},
        headers={"Authorization": f"Bearer {operator_key}"},
    )
    if made.status_code != 201:
        return f"create: {made.status_code} {made.text[:200]}"
    created = made.json()
    return Created(created["match_id"], created["tokens"], {name: seat for seat, name in enumerate(create["seats"])})


async def play_match(
    client: httpx.AsyncClient, operator_key: str, match: list[bytes], bot: int, deadline: float, tally: HttpTally
) -> None:
    records = [orjson.loads(raw) for raw in match]
    made = await create_match(client, operator_key, records, bot)
    if isinstance(made, str):
        return failed(tally, made)
    tally.moves += 1
    match_id, tokens, seat_of = made.match_id, made.tokens, made.seat_of
    for record in records[1:]:
        if time.perf_counter() >= deadline:
            return
        token = tokens[seat_of[record["player"]]]
        started = time.perf_counter()
        answer = await client.post(
            f"/v1/matches/{match_id}/actions",
            params={"wait": "true"},
            json={"action": record["action"]},
            headers={"Authorization": f"Bearer {token}"},
        )
        took = (time.perf_counter() - started) * 1000
        if answer.status_code != 200 or answer.json().get("status") != "accepted":
            return failed(tally, f"action: {answer.status_code} {answer.text[:200]}")
        tally.latencies_ms.append(took)
        tally.moves += 1


def failed(tally, why: str) -> None:
    """Count a failure of `tally` (anything with `failed` and `failures`), keeping the first few reasons."""
    tally.failed += 1
    if len(tally.failures) < 5:
        tally.failures.append(why)


async def play(
    base_url: str,
    operator_key: str,
    matches: Iterator[list[bytes]],
    bots: int,
    seconds: float,
    on_tick=lambda fraction: None,
) -> tuple[HttpTally, float]:
    """`bots` bots as fast as the gateway answers for `seconds`; returns the tally and the time.
    Each bot has a client (one keep-alive connection) of its own: one pool shared by many
    concurrent requests costs httpx far more CPU than the gateway spends on them."""
    tally = HttpTally()
    started = time.perf_counter()
    deadline = started + seconds

    async def bot(number: int) -> None:
        async with httpx.AsyncClient(
            base_url=base_url, timeout=30.0, verify=False
        ) as client:  # plain HTTP: no CA bundle to load
            while time.perf_counter() < deadline:
                match = next(matches, None)
                if match is None:
                    return
                await play_match(client, operator_key, match, number, deadline, tally)

    async def ticker() -> None:
        while time.perf_counter() < deadline:
            on_tick((time.perf_counter() - started) / seconds)
            await asyncio.sleep(0.2)

    await asyncio.gather(ticker(), *(bot(n) for n in range(bots)))
    return tally, time.perf_counter() - started
