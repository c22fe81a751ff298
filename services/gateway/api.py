"""The HTTP API, version 1, its read side: the lobby, a match's view, events, positions and live stream,
leaderboards and stats (docs/api.md, and the OpenAPI page at /docs). Playing is in play.py, the
probes in ops.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Path, Query, Request, Response

from games.match import view as match_view
from schemas.base import GAME_NAMES, GameName, MatchId

from .auth import client_address
from .errors import ApiError
from .matches import known_match
from .resources import AccessDep, LeasesDep, PositionsDep, ProjectionDep, StreamDep
from .stream_leases import LeasedStream

router = APIRouter()
LOBBY_DEPTH = 1000  # the lobby's deepest offset: each page merges offset + limit entries of every partition
EVENTS_PAGE = 10_000  # log entries one GET /events answers with, at most


# --- matches: read ------------------------------------------------------------------------------------
@router.get("/v1/matches", tags=["read"], summary="Lobby: open, active or recently finished matches, newest first")
async def list_matches(
    projection: ProjectionDep,
    status: Literal["open", "active", "recent"] = "open",
    game: GameName | None = None,
    limit: int = Query(50, ge=1, le=200),
    offset: int = Query(0, ge=0, le=LOBBY_DEPTH, description=f"at most {LOBBY_DEPTH}: the lobby is not an archive"),
) -> Any:
    matches = await projection.match_list(status, game, limit, offset)
    return {"status": status, "game": game, "matches": matches}


@router.get("/v1/matches/{match_id}", tags=["read"], summary="The public view of a match")
async def get_match(match_id: MatchId, projection: ProjectionDep) -> Any:
    found = await known_match(projection, match_id, "view")
    return found["view"]


@router.get("/v1/matches/{match_id}/events", tags=["read"], summary="Accepted results' public events, by seq")
async def get_events(
    match_id: MatchId,
    projection: ProjectionDep,
    since: int = Query(0, ge=0),
    limit: int = Query(EVENTS_PAGE, ge=1, le=EVENTS_PAGE, description="the rest: again with `since` = the last seq"),
) -> Any:
    await known_match(projection, match_id)
    entries = await projection.log_since_raw(match_id, since, limit)  # passed on as stored, undecoded
    head = orjson.dumps({"match_id": match_id, "since": since})[:-1]
    return Response(head + b',"results":[' + b",".join(entries) + b"]}", media_type="application/json")


@router.get(
    "/v1/matches/{match_id}/positions/{seq}",
    tags=["read"],
    summary="Time travel: the public view as it was at `seq` (refolded from the log)",
)
async def get_position(
    match_id: MatchId, seq: int, request: Request, access: AccessDep, positions: PositionsDep
) -> Any:
    if not positions.folded_through(match_id):  # a first fold: limited per client address
        await access.limit_address(request)
    folded = await positions.folded(match_id)
    state = folded.at(seq)
    if state is None:
        raise ApiError(404, "no_such_position", f"{match_id!r} has positions 1..{len(folded.states)}, not {seq}")
    return match_view(state, None)


@router.get(
    "/v1/matches/{match_id}/stream",
    tags=["read"],
    summary="Server-Sent Events of the match's results; resume with Last-Event-ID (= seq)",
)
async def stream(
    match_id: MatchId,
    request: Request,
    projection: ProjectionDep,
    results: StreamDep,
    leases: LeasesDep,
    since: int | None = Query(None, ge=0),
) -> Any:
    await known_match(projection, match_id)
    header = request.headers.get("last-event-id", "").strip()
    if since is None:
        try:
            since = max(0, int(header)) if header else 0
        except ValueError:
            raise ApiError(422, "malformed", f"Last-Event-ID must be a seq (an integer), not {header!r}") from None
    lease = await leases.take(client_address(request))  # before the response starts: 429 at the cap
    return LeasedStream(
        leases,
        lease,
        results.events(match_id, since),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


# --- players and stats ------------------------------------------------------------------------------
def _known_game(game: str) -> str:
    if game not in GAME_NAMES:
        raise ApiError(404, "unknown_game", f"no game {game!r}; one of {', '.join(GAME_NAMES)}")
    return game


@router.get("/v1/leaderboards/{game}", tags=["stats"], summary="Top players of a game by rating, wins or played")
async def leaderboard(
    game: str,
    projection: ProjectionDep,
    by: Literal["rating", "wins", "played"] = "rating",
    limit: int = Query(20, ge=1, le=200),
) -> Any:
    entries = await projection.leaderboard(_known_game(game), by, limit)
    return {"game": game, "by": by, "entries": entries}


@router.get("/v1/players/{player}", tags=["stats"], summary="A player's results and rating per game")
async def player(player: Annotated[str, Path(min_length=1, max_length=64)], projection: ProjectionDep) -> Any:
    games = await projection.player(player)
    if games is None:
        raise ApiError(404, "unknown_player", f"{player!r} has not finished a match")
    return {"player": player, "games": games}


@router.get("/v1/stats/{game}/activity", tags=["stats"], summary="Matches started/finished and moves per UTC day")
async def activity(game: str, projection: ProjectionDep, days: int = Query(14, ge=1, le=366)) -> Any:
    return await projection.activity(_known_game(game), days)
