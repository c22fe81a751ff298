"""A player's pages over HTTP (docs/my-games.md): "my games" (their unfinished matches, the ones
waiting for their move first, with the time left), their rating history per game (built by the
projector from plylog.outcomes) and their recent matches."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from games.clocks import DAY_MS
from schemas.base import GAME_NAMES

from .errors import ApiError
from .resources import AccessDep, ProjectionDep

router = APIRouter()
PlayerPath = Annotated[str, Path(min_length=1, max_length=64)]


def time_left_ms(view: dict[str, Any], seat: int, now_ms: int) -> int | None:
    """What the seat has left now: its clock runs from `since_ms` while it is to move."""
    clock = view.get("clock") or {}
    remaining = clock.get("remaining_ms")
    if not remaining:
        return None
    left = int(remaining[seat])
    if clock.get("since_ms") is not None and seat in (view.get("to_move") or ()):
        left -= max(0, now_ms - int(clock["since_ms"]))
    return max(0, left)


def my_game(match: dict[str, Any], player: str, now_ms: int) -> dict[str, Any]:
    """One row of "my games": whose move, the time left (days for a correspondence clock)."""
    view = match.get("view") or {}
    seats = match.get("seats") or []
    seat = seats.index(player) if player in seats else None
    to_move = view.get("to_move") or []
    clock = view.get("clock") or {}
    left = None if seat is None else time_left_ms(view, seat, now_ms)
    row = {
        "match_id": match["match_id"],
        "game": match.get("game"),
        "status": match.get("status"),
        "seats": seats,
        "seat": seat,
        "opponent": next((p for i, p in enumerate(seats) if i != seat), None),
        "your_move": match.get("status") == "active" and seat is not None and seat in to_move,
        "seq": match.get("seq"),
        "updated_ms": match.get("updated_ms"),
        "clock_kind": clock.get("kind") or ("fischer" if clock else None),
        "time_left_ms": left,
        "days_left": None if left is None or clock.get("kind") != "correspondence" else round(left / DAY_MS, 2),
    }
    return row


def order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Waiting for your move first (the least time left first), then the others (latest update first)."""
    waiting = sorted(
        (r for r in rows if r["your_move"]),
        key=lambda r: (r["time_left_ms"] is None, r["time_left_ms"] or 0, r["match_id"]),
    )
    others = sorted((r for r in rows if not r["your_move"]), key=lambda r: -(r["updated_ms"] or 0))
    return waiting + others


async def games_of(projection: Any, player: str) -> dict[str, Any]:
    now_ms = int(time.time() * 1000)
    rows = order([my_game(m, player, now_ms) for m in await projection.player_matches(player)])
    return {"player": player, "your_move": sum(r["your_move"] for r in rows), "matches": rows}


@router.get("/v1/me/games", tags=["players"], summary='"My games": your unfinished matches, your move first')
async def my_games(request: Request, access: AccessDep, projection: ProjectionDep) -> Any:
    return await games_of(projection, access.identify(request).player)


@router.get("/v1/players/{player}/games", tags=["players"], summary="A player's unfinished matches, their move first")
async def player_games(player: PlayerPath, projection: ProjectionDep) -> Any:
    return await games_of(projection, player)


@router.get(
    "/v1/players/{player}/ratings/{game}",
    tags=["players"],
    summary="The player's rating after each rated outcome of the game, oldest first",
)
async def rating_history(
    player: PlayerPath, game: str, projection: ProjectionDep, limit: int = Query(1000, ge=1, le=1000)
) -> Any:
    if game not in GAME_NAMES:
        raise ApiError(404, "unknown_game", f"no game {game!r}; one of {', '.join(GAME_NAMES)}")
    return {"player": player, "game": game, "history": await projection.rating_history(player, game, limit)}


@router.get("/v1/players/{player}/recent", tags=["players"], summary="The player's latest finished matches")
async def recent(player: PlayerPath, projection: ProjectionDep, limit: int = Query(20, ge=1, le=100)) -> Any:
    return {"player": player, "matches": await projection.player_recent(player, limit)}
