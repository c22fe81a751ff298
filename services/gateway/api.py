"""The HTTP API, version 1 (see the README, "HTTP API", and /docs)."""
from __future__ import annotations

import asyncio
import itertools
import secrets
import uuid
from typing import Any, Literal, Optional

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from games.match import view as match_view
from games.registry import get_game
from schemas.base import GAME_NAMES, EventId, GameName, MatchId, PlayerId, Seat
from schemas.lifecycle import Clock

from .app import Gateway
from .errors import ApiError
from .history import Folded, HistoryUnavailable
from .metrics import CONTENT_TYPE_LATEST
from .submit import move_record
from .tokens import InvalidToken, Seat as SeatClaim

router = APIRouter()
MAX_WAIT_S = 60.0


# --- request bodies ---------------------------------------------------------------------------------
class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewMatch(Body):
    game: GameName
    seats: list[Optional[PlayerId]] = Field(min_length=2, max_length=2,
                                            description="player ids, seat 0 first; null = an open seat")
    options: dict[str, Any] = Field(default_factory=dict, description="the game's options (rules/<game>.md)")
    clock: Optional[Clock] = None
    match_id: Optional[MatchId] = Field(default=None, description="omitted: a new random id")
    creator: Optional[PlayerId] = Field(default=None, description="who creates it (default: the first named seat)")


class JoinRequest(Body):
    player: PlayerId


class ActionRequest(Body):
    action: dict[str, Any] = Field(description='a lifecycle or game action, e.g. {"type": "resign"}')
    event_id: Optional[EventId] = Field(default=None, description="idempotency key; omitted: a new one")
    expected_seq: Optional[int] = Field(default=None, ge=0, le=2**53, description="reject as stale unless the match is at this seq")
    seat: Optional[Seat] = Field(default=None, description="the seat you act for; must be the token's")


# --- helpers -------------------------------------------------------------------------------------------
def gw(request: Request) -> Gateway:
    return request.app.state.gateway


def _wait_timeout(gateway: Gateway, timeout: Optional[float]) -> float:
    return min(timeout, MAX_WAIT_S) if timeout is not None else gateway.config.wait_timeout_s


def seat_of(request: Request, match_id: str) -> SeatClaim:
    """The seat the bearer token proves (401 without a valid token, 403 for another match)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "unauthorized", "a seat token is required: send `Authorization: Bearer <token>` "
                                            "(tokens come from POST /v1/matches and POST /v1/matches/{id}/join)",
                       headers={"WWW-Authenticate": "Bearer"})
    try:
        claim = gw(request).tokens.verify(token.strip())
    except InvalidToken as error:
        raise ApiError(401, "unauthorized", str(error), headers={"WWW-Authenticate": "Bearer"}) from None
    if claim.match_id != match_id:
        raise ApiError(403, "forbidden", f"this seat token is for match {claim.match_id!r}, not {match_id!r}")
    return claim


def _check_seat(claim: SeatClaim, seat: Optional[int]) -> None:
    if seat is not None and seat != claim.seat:
        raise ApiError(403, "forbidden", f"this seat token is for seat {claim.seat}, not seat {seat}")


async def known_match(gateway: Gateway, match_id: str, *fields: str) -> dict[str, Any]:
    found = await gateway.projection.match_fields(match_id, *fields)
    if found is None:
        raise ApiError(404, "unknown_match", f"no match {match_id!r} (or it is not projected yet)")
    return found


async def _folded(gateway: Gateway, match_id: str) -> Folded:
    meta = await known_match(gateway, match_id, "created_at")
    try:
        return await gateway.history.fold(match_id, meta.get("created_at") or "1970-01-01T00:00:00Z")
    except HistoryUnavailable as error:
        raise ApiError(503, "unavailable", f"the match log cannot be read now: {error}") from None


def _rejection(result: dict[str, Any], status: int) -> ApiError:
    reason = result.get("reason") or {"code": "rejected", "message": "rejected"}
    return ApiError(status, reason["code"], reason["message"], result=result)


def _pending(record: dict[str, Any], **extra: Any) -> JSONResponse:
    return JSONResponse({"status": "pending", "match_id": record["match_id"], "event_id": record["event_id"],
                         "message": "written to the log; no result within the wait time (watch the stream)",
                         **extra}, 202)


async def _rate_limit(gateway: Gateway, player: str) -> None:
    verdict = await gateway.limiter.take(player)
    if not verdict.allowed:
        gateway.metrics.rate_limited.inc()
        raise ApiError(429, "rate_limited", f"too many actions from {player!r}: at most "
                                            f"{gateway.config.rate_per_s:g}/s (bursts of {gateway.config.rate_burst:g}); "
                                            f"retry in {verdict.retry_after_ms} ms",
                       headers={"Retry-After": str(verdict.retry_after_s)})


# --- matches: create, join, act ---------------------------------------------------------------------
@router.post("/v1/matches", status_code=201, tags=["play"], summary="Create a match; returns a seat token per named seat")
async def create_match(body: NewMatch, request: Request, timeout: Optional[float] = Query(None, gt=0)) -> Any:
    gateway = gw(request)
    match_id = body.match_id or f"m-{uuid.uuid4().hex[:12]}"
    creator = body.creator or next((p for p in body.seats if p), "plylog-gateway")
    await _rate_limit(gateway, creator)
    action = {"type": "create", "game": body.game, "seats": body.seats, "options": body.options}
    if body.clock is not None:
        action["clock"] = body.clock.model_dump()
    record = move_record(match_id, creator, action)
    tokens = [gateway.tokens.issue(match_id, seat) if player else None for seat, player in enumerate(body.seats)]
    result = await gateway.submitter.submit(record, wait=True, timeout_s=_wait_timeout(gateway, timeout))
    if result is None:
        return _pending(record, tokens=tokens)
    if result["status"] != "accepted":
        code = 409 if result["reason"]["code"] == "match_exists" else 422
        raise _rejection(result, code)
    return JSONResponse({"match_id": match_id, "seq": result["seq"], "seats": body.seats, "tokens": tokens,
                         "view": result["view"]}, 201, headers={"Location": f"/v1/matches/{match_id}"})


@router.post("/v1/matches/{match_id}/join", tags=["play"], summary="Take the first open seat; returns its token")
async def join_match(match_id: MatchId, body: JoinRequest, request: Request,
                     timeout: Optional[float] = Query(None, gt=0)) -> Any:
    gateway = gw(request)
    await known_match(gateway, match_id)
    await _rate_limit(gateway, body.player)
    record = move_record(match_id, body.player, {"type": "join"})
    result = await gateway.submitter.submit(record, wait=True, timeout_s=_wait_timeout(gateway, timeout))
    if result is None:
        return _pending(record)
    if result["status"] != "accepted":
        raise _rejection(result, 409)
    joined = next(e for e in result["events"] if e["type"] == "seat_joined")
    return {"match_id": match_id, "seat": joined["seat"], "player": body.player,
            "token": gateway.tokens.issue(match_id, joined["seat"]), "seq": result["seq"], "view": result["view"]}


@router.post("/v1/matches/{match_id}/actions", status_code=202, tags=["play"],
             summary="Submit an action for the token's seat (wait=true: get its result)")
async def act(match_id: MatchId, body: ActionRequest, request: Request, wait: bool = False,
              timeout: Optional[float] = Query(None, gt=0)) -> Any:
    gateway = gw(request)
    claim = seat_of(request, match_id)
    _check_seat(claim, body.seat)
    if not isinstance(body.action.get("type"), str):
        raise ApiError(422, "malformed", 'action: needs a "type" (e.g. {"type": "resign"})')
    meta = await known_match(gateway, match_id, "seats")
    player = (meta.get("seats") or [None, None])[claim.seat]
    if player is None:
        raise ApiError(403, "forbidden", f"seat {claim.seat} of {match_id!r} has no player yet")
    await _rate_limit(gateway, player)
    record = move_record(match_id, player, body.action, body.event_id, body.expected_seq)
    result = await gateway.submitter.submit(record, wait=wait, timeout_s=_wait_timeout(gateway, timeout))
    if not wait:
        return {"status": "submitted", "match_id": match_id, "event_id": record["event_id"], "at": record["at"]}
    if result is None:
        return _pending(record)
    return JSONResponse(result, 200)


# --- matches: read ------------------------------------------------------------------------------------
@router.get("/v1/matches", tags=["read"], summary="Lobby: open, active or recently finished matches, newest first")
async def list_matches(request: Request, status: Literal["open", "active", "recent"] = "open",
                       game: Optional[GameName] = None, limit: int = Query(50, ge=1, le=200),
                       offset: int = Query(0, ge=0)) -> Any:
    matches = await gw(request).projection.match_list(status, game, limit, offset)
    return {"status": status, "game": game, "matches": matches}


@router.get("/v1/matches/{match_id}", tags=["read"], summary="The public view of a match")
async def get_match(match_id: MatchId, request: Request) -> Any:
    found = await known_match(gw(request), match_id, "view")
    return found["view"]


@router.get("/v1/matches/{match_id}/events", tags=["read"], summary="Accepted results' public events, by seq")
async def get_events(match_id: MatchId, request: Request, since: int = Query(0, ge=0),
                     limit: Optional[int] = Query(None, ge=1, le=10_000)) -> Any:
    gateway = gw(request)
    await known_match(gateway, match_id)
    return {"match_id": match_id, "since": since, "results": await gateway.projection.log_since(match_id, since, limit)}


@router.get("/v1/matches/{match_id}/positions/{seq}", tags=["read"],
            summary="Time travel: the public view as it was at `seq` (refolded from the log)")
async def get_position(match_id: MatchId, seq: int, request: Request) -> Any:
    folded = await _folded(gw(request), match_id)
    state = folded.at(seq)
    if state is None:
        raise ApiError(404, "no_such_position", f"{match_id!r} has positions 1..{len(folded.states)}, not {seq}")
    return match_view(state, None)


@router.get("/v1/matches/{match_id}/legal-actions", tags=["play"],
            summary="The token's seat's legal actions now (empty when it is not to move)")
async def legal_actions(match_id: MatchId, request: Request, seat: Optional[int] = Query(None, ge=0, le=1)) -> Any:
    gateway = gw(request)
    claim = seat_of(request, match_id)
    _check_seat(claim, seat)
    state = (await _folded(gateway, match_id)).current
    actions: list[dict[str, Any]] = []
    truncated, commit_listed = False, False
    if state is not None and claim.seat in state.to_move():
        cap = gateway.config.legal_actions_cap
        listed = await asyncio.to_thread(
            lambda: list(itertools.islice(get_game(state.game).legal_actions(state.board, claim.seat), cap + 1)))
        truncated = len(listed) > cap
        commit_listed = any(a.get("type") == "commit" for a in listed)
        actions = _without_guessable_secrets(listed[:cap])
    body = {"match_id": match_id, "seat": claim.seat, "seq": state.seq if state else 0,
            "status": state.status if state else None, "to_move": list(state.to_move()) if state else [],
            "actions": actions, "truncated": truncated}
    if commit_listed:
        body["hint"] = ("commit: send the MM1 commitment of a code and salt of your own "
                        "(sha256 hex of \"MM1|<match>|<round>|<attempt>|<c,o,d,e>|<salt>\"; rules/mastermind.md)")
    return body


def _without_guessable_secrets(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules list Mastermind's set_code with a salt, and commit with a commitment, derived from
    public data (fine for bots, fatal for a person: the code could be recovered from the public
    commitment). set_code gets a fresh unguessable salt; commit is left out (the client makes its own)."""
    salt = secrets.token_hex(16)
    return [{**a, "salt": salt} if a.get("type") == "set_code" else a
            for a in actions if a.get("type") != "commit"]


@router.get("/v1/matches/{match_id}/stream", tags=["read"],
            summary="Server-Sent Events of the match's results; resume with Last-Event-ID (= seq)")
async def stream(match_id: MatchId, request: Request, since: Optional[int] = Query(None, ge=0)) -> Any:
    gateway = gw(request)
    await known_match(gateway, match_id)
    header = request.headers.get("last-event-id", "").strip()
    if since is None:
        try:
            since = max(0, int(header)) if header else 0
        except ValueError:
            raise ApiError(422, "malformed", f"Last-Event-ID must be a seq (an integer), not {header!r}") from None
    return StreamingResponse(gateway.stream.events(match_id, since), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


# --- players and stats ------------------------------------------------------------------------------
def _known_game(game: str) -> str:
    if game not in GAME_NAMES:
        raise ApiError(404, "unknown_game", f"no game {game!r}; one of {', '.join(GAME_NAMES)}")
    return game


@router.get("/v1/leaderboards/{game}", tags=["stats"], summary="Top players of a game by rating, wins or played")
async def leaderboard(game: str, request: Request, by: Literal["rating", "wins", "played"] = "rating",
                      limit: int = Query(20, ge=1, le=200)) -> Any:
    entries = await gw(request).projection.leaderboard(_known_game(game), by, limit)
    return {"game": game, "by": by, "entries": entries}


@router.get("/v1/players/{player}", tags=["stats"], summary="A player's results and rating per game")
async def player(player: str, request: Request) -> Any:
    games = await gw(request).projection.player(player)
    if games is None:
        raise ApiError(404, "unknown_player", f"{player!r} has not finished a match")
    return {"player": player, "games": games}


@router.get("/v1/stats/{game}/activity", tags=["stats"], summary="Matches started/finished and moves per UTC day")
async def activity(game: str, request: Request, days: int = Query(14, ge=1, le=366)) -> Any:
    return await gw(request).projection.activity(_known_game(game), days)


# --- operations --------------------------------------------------------------------------------------
@router.get("/healthz", tags=["ops"], summary="200 when Kafka and Redis answer, else 503")
async def healthz(request: Request) -> Any:
    gateway = gw(request)
    checks = {"redis": "ok", "kafka": "ok", "live": "ok" if gateway.hub.connected.is_set() else "disconnected"}
    try:
        await asyncio.wait_for(gateway.redis.ping(), 2)
    except Exception as error:  # noqa: BLE001
        checks["redis"] = f"error: {type(error).__name__}: {error}"
    try:
        await asyncio.wait_for(gateway.producer.client.fetch_all_metadata(), 3)
    except Exception as error:  # noqa: BLE001
        checks["kafka"] = f"error: {type(error).__name__}: {error}"
    healthy = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ok" if healthy else "unhealthy", **checks}, 200 if healthy else 503)


@router.get("/metrics", tags=["ops"], summary="Prometheus metrics (text format)")
async def metrics(request: Request) -> Response:
    return Response(gw(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)
