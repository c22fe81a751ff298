"""The lobby over HTTP (docs/matchmaking.md, "The API"): post, accept and cancel seeks; join and
leave a pool; the lobby's seeks and pools, now or live (SSE). Every submission is the player's the
credential proves, limited like the other player actions, and stamped with the time and the
player's rating by the gateway; the matchmaker service decides it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import Field

from games.core import Rejected
from games.registry import rules_to_state
from schemas.base import GameName, PlayerId, RulesName, Seat
from schemas.lifecycle import AnyClock
from schemas.matchmaking import MAX_TTL_S, Rating, SeekId

from .auth import client_address
from .errors import ApiError
from .matches import Body
from .play import BOT_PREFIX, playable_bots
from .resources import AccessDep, ConfigDep, LeasesDep, LobbyDep, ProjectionDep
from .stream_leases import LeasedStream

router = APIRouter()
WAIT = Query(5.0, ge=0, le=10, description="seconds to wait for the matchmaker's answer (then 202, pending)")


class SeekRequest(Body):
    game: GameName
    options: dict[str, Any] = Field(default_factory=dict)
    clock: AnyClock | None = None
    rating_min: Rating | None = None
    rating_max: Rating | None = None
    seat: Seat | None = None
    ttl_s: int | None = Field(default=None, ge=1, le=MAX_TTL_S)
    rules: RulesName | None = Field(
        default=None, description="the rules version of the match, e.g. `strands/2`; omitted: the version in force"
    )
    event_id: str | None = Field(default=None, max_length=64, description="a retry's idempotency key")


class PoolRequest(Body):
    game: GameName
    options: dict[str, Any] = Field(default_factory=dict)
    clock: AnyClock | None = None
    ttl_s: int | None = Field(default=None, ge=1, le=MAX_TTL_S)
    bot: PlayerId | None = Field(default=None, description="a bot that may take the other seat, e.g. bot:mcts-2")
    bot_after_s: int | None = Field(default=None, ge=0, le=MAX_TTL_S)
    rules: RulesName | None = Field(
        default=None,
        description="the rules version of the matches (only entries of one version pair), e.g. `strands/2`; "
        "omitted: the version in force",
    )
    event_id: str | None = Field(default=None, max_length=64)


def _answer(result: dict[str, Any]) -> Any:
    if result.get("status") == "pending":
        return JSONResponse(result, status_code=202)
    if result.get("status") == "rejected":
        reason = result.get("reason") or {}
        code = reason.get("code", "rejected")
        status = 422 if code in ("malformed", "illegal", "too_large", "unknown_rules") else 409
        raise ApiError(status, code, reason.get("message", "the lobby refused it"))
    return result


async def _player(request: Request, access: Any) -> str:
    identity = access.identify(request)
    await access.limit_player(identity.player)
    return str(identity.player)


def _without_none(body: Body) -> dict[str, Any]:
    return {k: v for k, v in body.model_dump(mode="json").items() if v is not None and k != "event_id"}


def _terms(body: SeekRequest | PoolRequest) -> dict[str, Any]:
    """The body as action fields, stating the rules version its matches are made under (the one
    asked for, or the one in force: 422 `unknown_rules` as POST /v1/matches)."""
    try:
        return {**_without_none(body), "rules": rules_to_state(body.game, body.rules)}
    except Rejected as rejection:
        raise ApiError(422, rejection.code, rejection.message) from None


@router.get("/v1/lobby", tags=["lobby"], summary="The open seeks and the pools' waiting players")
async def lobby_view(lobby: LobbyDep) -> Any:
    return await lobby.view()


@router.get("/v1/lobby/stream", tags=["lobby"], summary="Server-Sent Events of the lobby's view (event `lobby`)")
async def lobby_stream(request: Request, lobby: LobbyDep, leases: LeasesDep, config: ConfigDep) -> Any:
    lease = await leases.take(client_address(request))
    return LeasedStream(
        leases,
        lease,
        lobby.stream(config.keepalive_s),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.post("/v1/lobby/seeks", tags=["lobby"], summary="Offer a game to anyone within a rating range")
async def post_seek(body: SeekRequest, request: Request, access: AccessDep, lobby: LobbyDep, wait: float = WAIT) -> Any:
    player = await _player(request, access)
    action = {"type": "seek", **_terms(body), "rating": await lobby.rating(player, body.game)}
    return _answer(await lobby.submit(player, action, body.event_id, wait))


@router.post("/v1/lobby/seeks/{seek_id}/accept", tags=["lobby"], summary="Accept a seek: the match is created")
async def accept_seek(seek_id: SeekId, request: Request, access: AccessDep, lobby: LobbyDep, wait: float = WAIT) -> Any:
    player = await _player(request, access)
    seek = next((s for s in (await lobby.view())["seeks"] if s["seek_id"] == seek_id), None)
    if seek is None:
        raise ApiError(404, "unknown_seek", f"no open seek {seek_id!r}")
    action = {"type": "accept_seek", "seek_id": seek_id, "rating": await lobby.rating(player, seek["game"])}
    return _answer(await lobby.submit(player, action, None, wait))


@router.delete("/v1/lobby/seeks/{seek_id}", tags=["lobby"], summary="Cancel your seek")
async def cancel_seek(seek_id: SeekId, request: Request, access: AccessDep, lobby: LobbyDep, wait: float = WAIT) -> Any:
    player = await _player(request, access)
    return _answer(await lobby.submit(player, {"type": "cancel_seek", "seek_id": seek_id}, None, wait))


@router.post("/v1/lobby/pool", tags=["lobby"], summary="Wait in a pool until the matchmaker pairs you")
async def join_pool(
    body: PoolRequest,
    request: Request,
    access: AccessDep,
    lobby: LobbyDep,
    projection: ProjectionDep,
    wait: float = WAIT,
) -> Any:
    player = await _player(request, access)
    if body.bot is not None:  # the decider trusts the name: only a bot may be seated without asking
        if not body.bot.startswith(BOT_PREFIX):
            raise ApiError(422, "unknown_bot", f"{body.bot!r} is not a bot (bot ids start with {BOT_PREFIX!r})")
        await playable_bots(projection, body.game, [body.bot])
    action = {"type": "join_pool", **_terms(body), "rating": await lobby.rating(player, body.game)}
    return _answer(await lobby.submit(player, action, body.event_id, wait))


@router.delete("/v1/lobby/pool", tags=["lobby"], summary="Leave the pool you wait in")
async def leave_pool(request: Request, access: AccessDep, lobby: LobbyDep, wait: float = WAIT) -> Any:
    player = await _player(request, access)
    return _answer(await lobby.submit(player, {"type": "leave_pool"}, None, wait))


@router.get("/v1/lobby/results/{event_id}", tags=["lobby"], summary="The answer to one of your lobby submissions")
async def lobby_result(event_id: str, request: Request, access: AccessDep, lobby: LobbyDep) -> Any:
    player = access.identify(request).player
    found = await lobby.result(player, event_id[:64])
    if found is None:
        raise ApiError(404, "unknown_submission", f"no answer (yet) to your lobby submission {event_id!r}")
    return found
