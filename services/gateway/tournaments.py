"""Tournament routes: create, register, withdraw (records on `plylog.tournaments`, written as the
caller), the lobby's list, a tournament's view (standings, pairings, crosstable) and its live
updates over SSE. The tournament service does the rest (docs/tournaments.md)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import Field, ValidationError

from games.core import Rejected, describe_validation_error
from games.registry import rules_to_state
from schemas.base import PlayerId, Strict
from schemas.tournament import DIRECTOR, CreateTournament, TournamentId

from .auth import client_address
from .errors import ApiError
from .resources import AccessDep, LeasesDep, TournamentsDep
from .stream_leases import LeasedStream

router = APIRouter()
#: the match ids of tournament pairings (`<tournament>-r<round>b<board>[g<game>]`): nobody else may
#: create one, or a player could take a future pairing's match before the tournament service does
TOURNAMENT_MATCH_ID = re.compile(r"-r[0-9]+b[0-9]+(g[0-9]+)?$")
WAIT_S = 10.0
BOT_PREFIX = "bot:"
STREAM_MOST_S = 600.0
REJECTION_STATUS = {"forbidden": 403, "unknown_tournament": 404, "tournament_exists": 409, "already_registered": 409}
NO_CLOCK = (
    "a tournament needs a clock: the service seats both players of every match at once, so only the "
    "match clock decides a player who never comes or stops moving; add clock "
    '{"initial_s": 300, "increment_s": 2} (CLI: --clock 300+2), or a correspondence clock '
    '{"kind": "correspondence", "days_per_move": 3} (CLI: --clock 3d)'
)


def refuse_tournament_match_id(match_id: str) -> None:
    if TOURNAMENT_MATCH_ID.search(match_id):
        raise ApiError(
            422,
            "reserved_match_id",
            f"match ids ending like {match_id[-8:]!r} are the tournament service's; pick another",
        )


class Entry(Strict):
    player: PlayerId | None = Field(
        default=None,
        description="default: you; the creator may enter or withdraw bots (`bot:<id>`), and withdraw anyone",
    )


def names_another_person(caller: str, player: str | None) -> bool:
    return player is not None and player != caller and not player.startswith(BOT_PREFIX)


def check_named_player(kind: str, caller: str, player: str | None, creator: str | None) -> None:
    """Whom a `register` or `withdraw` through the gateway may name: the caller, or a bot (the fold lets
    only the creator enter or withdraw one, where bots are allowed); for a `withdraw`, the creator may
    name anyone (an organiser's power). Nobody enters another person, who has not agreed and would then
    lose their games on time, rated. Raises 403 `forbidden`."""
    if not names_another_person(caller, player):
        return
    if kind == "withdraw" and creator is not None and caller == creator:
        return
    if kind == "register":
        raise ApiError(
            403,
            "forbidden",
            f"you may register yourself or a bot (`bot:<id>`), not {player!r}: people enter themselves",
        )
    raise ApiError(
        403, "forbidden", f"you may withdraw yourself or a bot, not {player!r}: only the creator withdraws other people"
    )


async def _write(
    desk: TournamentsDep, access: AccessDep, request: Request, tournament_id: str, action: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    identity = access.identify(request)
    if identity.player == DIRECTOR:
        raise ApiError(403, "forbidden", f"{DIRECTOR!r} is the tournament service's own id")
    await access.limit_address(request)
    await access.limit_player(identity.player)
    result = await desk.write(tournament_id, identity.player, action, WAIT_S)
    if result is None:
        raise ApiError(504, "pending", "written, but the tournament service has not answered yet; look again shortly")
    if result["status"] != "accepted":
        reason = result.get("reason") or {}
        code = reason.get("code", "rejected")
        raise ApiError(REJECTION_STATUS.get(code, 422), code, reason.get("message", "refused"))
    return identity.player, result


@router.post("/v1/tournaments", status_code=201, tags=["tournaments"], summary="Create a tournament")
async def create_tournament(body: dict[str, Any], request: Request, access: AccessDep, desk: TournamentsDep) -> Any:
    tournament_id, action = create_action(body)
    _, result = await _write(desk, access, request, tournament_id, action)
    view = await desk.view(tournament_id)
    return JSONResponse(
        {"tournament_id": tournament_id, "seq": result["seq"], "view": view},
        201,
        headers={"Location": f"/v1/tournaments/{tournament_id}"},
    )


def create_action(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tournament id and the `create` action of a create's body, or 422: `malformed` for a body
    that is not a create, `illegal` for one without a clock, `unknown_rules` for a version that does
    not exist (none asked for: the version in force is stated). The clock is checked here, at the door,
    not in the fold: a clockless tournament written before this rule still folds as it did."""
    body = dict(body)
    tournament_id = body.pop("tournament_id", None) or f"t{uuid.uuid4().hex[:10]}"
    try:
        action = CreateTournament.model_validate({**body, "type": "create"}).model_dump(mode="json", exclude_none=True)
        _checked_id(tournament_id)
    except ValidationError as error:
        raise ApiError(422, "malformed", describe_validation_error(error, "tournament")) from None
    if action.get("clock") is None:  # the match clock is what decides a player who never comes
        raise ApiError(422, "illegal", NO_CLOCK)
    try:  # every match of the tournament is made under the version stated here, once
        action["rules"] = rules_to_state(action["game"], action.get("rules"))
    except Rejected as rejection:
        raise ApiError(422, rejection.code, rejection.message) from None
    return tournament_id, action


def _checked_id(tournament_id: Any) -> None:
    _Id.model_validate({"id": tournament_id})


class _Id(Strict):
    id: TournamentId


@router.post("/v1/tournaments/{tournament_id}/register", tags=["tournaments"], summary="Enter a tournament")
async def register(
    tournament_id: TournamentId, request: Request, access: AccessDep, desk: TournamentsDep, body: Entry | None = None
) -> Any:
    player = body.player if body is not None else None
    check_named_player("register", access.identify(request).player, player, None)
    action: dict[str, Any] = {"type": "register"}
    if player is not None:
        action.update(player=player, bot=player.startswith(BOT_PREFIX))
    actor, result = await _write(desk, access, request, tournament_id, action)
    return {"tournament_id": tournament_id, "player": player or actor, "seq": result["seq"]}


@router.post("/v1/tournaments/{tournament_id}/withdraw", tags=["tournaments"], summary="Leave a tournament")
async def withdraw(
    tournament_id: TournamentId, request: Request, access: AccessDep, desk: TournamentsDep, body: Entry | None = None
) -> Any:
    player = body.player if body is not None else None
    caller, creator = access.identify(request).player, None
    if names_another_person(caller, player):
        view = await desk.view(tournament_id)  # its creator, who may withdraw anyone (and never changes)
        creator = view.get("created_by") if view else None
    check_named_player("withdraw", caller, player, creator)
    action: dict[str, Any] = {"type": "withdraw"}
    if player is not None:
        action["player"] = player
    actor, result = await _write(desk, access, request, tournament_id, action)
    return {"tournament_id": tournament_id, "player": player or actor, "seq": result["seq"]}


@router.post("/v1/tournaments/{tournament_id}/start", tags=["tournaments"], summary="Start now (the creator)")
async def start(tournament_id: TournamentId, request: Request, access: AccessDep, desk: TournamentsDep) -> Any:
    _, result = await _write(desk, access, request, tournament_id, {"type": "start"})
    return {"tournament_id": tournament_id, "seq": result["seq"]}


@router.get("/v1/tournaments", tags=["tournaments"], summary="The latest tournaments, newest first")
async def list_tournaments(desk: TournamentsDep, limit: int = Query(50, ge=1, le=100)) -> Any:
    return {"tournaments": await desk.list(limit)}


@router.get(
    "/v1/tournaments/{tournament_id}",
    tags=["tournaments"],
    summary="A tournament: settings, standings, pairings (the current round's too), crosstable",
)
async def get_tournament(tournament_id: TournamentId, desk: TournamentsDep) -> Any:
    return await _known(desk, tournament_id)


async def _known(desk: TournamentsDep, tournament_id: str) -> dict[str, Any]:
    view = await desk.view(tournament_id)
    if view is None:
        raise ApiError(404, "unknown_tournament", f"no tournament {tournament_id!r}")
    return view


@router.get(
    "/v1/tournaments/{tournament_id}/stream",
    tags=["tournaments"],
    summary="Server-Sent Events: the tournament's view each time it changes (resume with Last-Event-ID)",
)
async def stream(tournament_id: TournamentId, request: Request, desk: TournamentsDep, leases: LeasesDep) -> Any:
    await _known(desk, tournament_id)
    header = request.headers.get("last-event-id", "").strip()
    since = int(header) if header.isdigit() else 0
    lease = await leases.take(client_address(request))  # the cap on live streams per client address
    return LeasedStream(
        leases,
        lease,
        desk.updates(tournament_id, since, STREAM_MOST_S),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
