"""Playing over HTTP: identities, creating and joining matches, seat tokens, actions.

A seat token is handed out only to the player who holds the seat (or to the operator): at a
create the rules accepted in that very request, at an accepted join, or later from
`GET /v1/matches/{id}/tokens` with the player's credential. A create naming another player seats
nobody but the creator: the other seat is reserved for that player, who takes it with their own
credential (`join`), so nobody plays — or loses a rated match — without having said so.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import Field

from games.core import Rejected
from games.match import create_match as rules_create
from games.registry import current_rules
from schemas.base import GameName, MatchId, PlayerId, RulesName
from schemas.lifecycle import AnyClock
from services.common import bot_directory
from services.common.projection import Projection

from .auth import SEAT_CREDENTIAL, bearer
from .errors import ApiError
from .identity import Identity, player_problem
from .matches import ActionRequest, Body, action_pending, known_match, refuse_if_over, seat_action
from .resources import AccessDep, BotCapDep, NamesDep, PositionsDep, ProjectionDep, SubmitterDep
from .submit import move_record
from .tokens import SeatTokens
from .tournaments import refuse_tournament_match_id

BOT_PREFIX = "bot:"

router = APIRouter()


class NewPlayer(Body):
    name: str = Field(
        description="1-40 letters, digits, '_', '.' or '-': the display name, kept in the player's sealed "
        "profile (docs/personal-data.md); the id is opaque: g~k3f9xq7m2pabcd4e"
    )


class NewMatch(Body):
    game: GameName
    seats: list[PlayerId | None] = Field(
        min_length=2,
        max_length=2,
        description="seat 0 first: yourself, null (an open seat), or another "
        "player (the seat is reserved for them; they join it)",
    )
    options: dict[str, Any] = Field(default_factory=dict, description="the game's options (rules/<game>.md)")
    clock: AnyClock | None = Field(
        default=None, description="a Fischer clock, or a correspondence clock (docs/correspondence.md)"
    )
    match_id: MatchId | None = Field(default=None, description="omitted: a new random id")
    creator: PlayerId | None = Field(
        default=None, description="operator only: who creates it (default: the credential's player)"
    )
    rated: bool = Field(default=True, description="false: an unrated match (its outcome moves no rating)")
    rules: RulesName | None = Field(
        default=None,
        description="the game's rules version, e.g. `strands/2` (docs/evolving.md); omitted: the version in force",
    )


class JoinRequest(Body):
    player: PlayerId | None = Field(
        default=None, description="operator only: the player who joins (others join as their credential's player)"
    )


# --- helpers -------------------------------------------------------------------------------------------
async def _refuse_known_id(projection: Projection, match_id: str) -> None:
    """A chosen id of a match the projection knows is refused here, not only by the rules worker:
    the worker forgets a finished match (games.fold.FORGET_FINISHED_AFTER) and would create a new
    one under its id, while its history stays the old match's."""
    found = await projection.match_fields(match_id, "status")
    if found is not None:
        raise ApiError(
            409,
            "match_exists",
            f"match {match_id!r} already exists ({found['game']}, {found['status']}); "
            "omit match_id for a new random id",
        )


def _rejection(result: dict[str, Any], status: int) -> ApiError:
    reason = result.get("reason") or {"code": "rejected", "message": "rejected"}
    return ApiError(status, reason["code"], reason["message"], result=result)


def _pending(record: dict[str, Any], what: str) -> JSONResponse:
    return JSONResponse(
        {
            "status": "pending",
            "match_id": record["match_id"],
            "event_id": record["event_id"],
            "message": f"written to the log; no result within the wait time. Watch the stream; once "
            f"{what}, GET /v1/matches/{record['match_id']}/tokens with your credential "
            "gives your seat token(s)",
        },
        202,
    )


async def playable_bots(projection: Projection, game: str, wanted: list[str | None]) -> set[str]:
    """The `bot:<id>` players of `wanted` a running bot service plays for `game` (422 for others)."""
    asked = [p for p in wanted if p is not None and p.startswith(BOT_PREFIX)]
    if not asked:
        return set()
    known = {f"{BOT_PREFIX}{e.bot_id}": e for e in await bot_directory.entries(projection.client, projection.keys)}
    for player in asked:
        entry = known.get(player)
        if entry is None or not entry.playable or game not in entry.games:
            why = (
                "no bot service plays it now"
                if entry is not None and not entry.fresh
                else "an operator turned it off"
                if entry is not None and not entry.enabled
                else f"it does not play {game}"
                if entry is not None
                else "there is no such bot"
            )
            players = sorted(p for p, e in known.items() if e.playable and game in e.games)
            raise ApiError(
                422,
                "unknown_bot",
                f"{player!r} cannot take a seat: {why}. Bots for {game}: "
                f"{', '.join(players) or 'none (is the bot service running?)'}",
            )
    return set(asked)


def _seating(identity: Identity, wanted: list[str | None], bots: set[str]) -> tuple[list[str | None], list[str | None]]:
    """(seats, invited) of a create: the operator seats whom it names; a player seats themselves
    and the bots it names, and reserves the seats of the other players it names."""
    for player in wanted:
        if player is not None and player not in bots and (problem := player_problem(player)):
            raise ApiError(422, "malformed", f"{player!r} cannot hold a seat: {problem}")
    if identity.operator:
        return list(wanted), [None, None]
    seated = {identity.player, *bots}
    seats = [p if p is None or p in seated else None for p in wanted]
    invited = [p if p is not None and p not in seated else None for p in wanted]
    return seats, invited


def _tokens_for(tokens: SeatTokens, identity: Identity, match_id: str, seats: list[str | None]) -> list[str | None]:
    return [
        tokens.issue(match_id, seat)
        if player is not None and (identity.operator or player == identity.player)
        else None
        for seat, player in enumerate(seats)
    ]


# --- identities ----------------------------------------------------------------------------------------
@router.post(
    "/v1/players", status_code=201, tags=["play"], summary="A new guest identity: its player id and token (guest mode)"
)
async def new_player(body: NewPlayer, request: Request, access: AccessDep, names: NamesDep) -> Any:
    await access.limit_address(request)
    try:
        player, token = access.authenticator.new_guest(body.name)
    except ValueError as error:  # InvalidCredential (jwt mode) too
        status = 403 if access.authenticator.mode != "guest" else 422
        raise ApiError(status, "forbidden" if status == 403 else "malformed", str(error)) from None
    await names.register(player, body.name)
    return JSONResponse({"player": player, "name": body.name, "token": token}, 201)


@router.get("/v1/whoami", tags=["play"], summary="The player the bearer credential proves")
async def whoami(request: Request, access: AccessDep) -> Any:
    identity = access.identify(request)
    return {"player": identity.player, "via": identity.via}


@router.get("/v1/bots", tags=["play"], summary="The bots you can play against, per game, weak to strong")
async def bots(projection: ProjectionDep, game: GameName | None = None) -> Any:
    from games.bots import LEVELS  # on first use: the bots' modules are not needed to serve play

    entries = {e.bot_id: e for e in await bot_directory.entries(projection.client, projection.keys)}
    games = [game] if game else list(LEVELS)
    return {
        "bots": {g: [entries[b].as_dict() for b in LEVELS[g] if b in entries and entries[b].playable] for g in games}
    }


# --- matches: create, join, tokens, act -------------------------------------------------------------
@router.post(
    "/v1/matches",
    status_code=201,
    tags=["play"],
    summary="Create a match; returns the seat tokens of the caller's seats",
)
async def create_match(
    body: NewMatch,
    request: Request,
    access: AccessDep,
    projection: ProjectionDep,
    bot_cap: BotCapDep,
    submitter: SubmitterDep,
    timeout: float | None = Query(None, gt=0),
) -> Any:
    identity = access.identify(request)
    if body.creator is not None and not identity.operator and body.creator != identity.player:
        raise ApiError(403, "forbidden", f"you create matches as {identity.player!r}; `creator` is the operator's")
    await access.limit_address(request)
    await access.limit_player(identity.player)
    seats, invited = _seating(identity, body.seats, await playable_bots(projection, body.game, body.seats))
    if body.match_id is not None:
        refuse_tournament_match_id(body.match_id)
        await _refuse_known_id(projection, body.match_id)
    match_id = body.match_id or f"m-{uuid.uuid4().hex[:12]}"
    action: dict[str, Any] = {"type": "create", "game": body.game, "seats": seats, "options": body.options}
    if body.clock is not None:
        action["clock"] = body.clock.model_dump()
    if any(invited):
        action["invited"] = invited
    if not body.rated:
        action["rated"] = False  # only then: a rated create keeps the bytes it always had
    # every new match states its rules version, so it folds by it for its whole life (and is chained)
    action["rules"] = body.rules or current_rules(body.game)
    record = move_record(match_id, body.creator or identity.player, action)
    try:  # the rules' own create, at the door: a create they would refuse is not written to the log
        rules_create(match_id, record["player"], action, record["at"])
    except Rejected as rejection:
        raise ApiError(422, rejection.code, rejection.message) from None
    counted = await bot_cap.for_create(identity, body.creator, seats, match_id)
    result = await bot_cap.submitted(counted, submitter.submit(record, wait=True, timeout_s=timeout))
    if result is None:
        return _pending(record, "the match is created")
    if result["status"] != "accepted" or result["duplicate"]:
        raise _rejection(result, 409 if result.get("reason", {}).get("code") == "match_exists" else 422)
    return JSONResponse(
        {
            "match_id": match_id,
            "seq": result["seq"],
            "seats": seats,
            "invited": invited,
            "tokens": _tokens_for(access.tokens, identity, match_id, seats),
            "view": result["view"],
        },
        201,
        headers={"Location": f"/v1/matches/{match_id}"},
    )


@router.post(
    "/v1/matches/{match_id}/join",
    tags=["play"],
    summary="Take an open seat (the one reserved for you, if any); returns its token",
)
async def join_match(
    match_id: MatchId,
    request: Request,
    access: AccessDep,
    projection: ProjectionDep,
    bot_cap: BotCapDep,
    submitter: SubmitterDep,
    body: JoinRequest | None = None,
    timeout: float | None = Query(None, gt=0),
) -> Any:
    identity = access.identify(request)
    named = body.player if body is not None else None
    if named is not None and not identity.operator and named != identity.player:
        raise ApiError(403, "forbidden", f"you join as {identity.player!r}; naming another player is the operator's")
    if identity.operator and named is None:
        raise ApiError(422, "malformed", 'the operator joins for a named player: send {"player": ...}')
    player = named or identity.player
    seats = (await known_match(projection, match_id, "seats")).get("seats")
    await access.limit_address(request)
    await access.limit_player(player)
    counted = await bot_cap.for_join(player, match_id, seats)
    record = move_record(match_id, player, {"type": "join"})
    result = await bot_cap.submitted(counted, submitter.submit(record, wait=True, timeout_s=timeout))
    if result is None:
        return _pending(record, "you have joined")
    if result["status"] != "accepted" or result["duplicate"]:
        raise _rejection(result, 409)
    joined = next(e for e in result["events"] if e["type"] == "seat_joined")
    return {
        "match_id": match_id,
        "seat": joined["seat"],
        "player": player,
        "token": access.tokens.issue(match_id, joined["seat"]),
        "seq": result["seq"],
        "view": result["view"],
    }


@router.get(
    "/v1/matches/{match_id}/tokens",
    tags=["play"],
    summary="The seat tokens of the seats the caller holds (the operator: every seat)",
)
async def seat_tokens(match_id: MatchId, request: Request, access: AccessDep, projection: ProjectionDep) -> Any:
    identity = access.identify(request)
    seats = (await known_match(projection, match_id, "seats")).get("seats") or [None, None]
    tokens = _tokens_for(access.tokens, identity, match_id, seats)
    if not any(tokens):
        raise ApiError(403, "forbidden", f"{identity.player!r} holds no seat in {match_id!r}")
    return JSONResponse({"match_id": match_id, "seats": seats, "tokens": tokens}, headers={"Cache-Control": "no-store"})


@router.post(
    "/v1/matches/{match_id}/actions",
    status_code=202,
    tags=["play"],
    summary="Submit an action for the token's seat (wait=true: get its result)",
)
async def act(
    match_id: MatchId,
    body: ActionRequest,
    request: Request,
    access: AccessDep,
    submitter: SubmitterDep,
    wait: bool = False,
    timeout: float | None = Query(None, gt=0),
) -> Any:
    acting = await access.seat_in(match_id, lambda: bearer(request, SEAT_CREDENTIAL), body.seat)
    refuse_if_over(match_id, acting.meta.get("status"))
    record = seat_action(match_id, acting.seat, acting.seats, body, acting.meta["game"])
    await access.limit_player(record["player"])
    result = await submitter.submit(record, wait=wait, timeout_s=timeout)
    if not wait:
        return {"status": "submitted", "match_id": match_id, "event_id": record["event_id"], "at": record["at"]}
    if result is None:
        return JSONResponse(action_pending(record, "watch the stream"), 202)
    return JSONResponse(result, 200)


@router.get(
    "/v1/matches/{match_id}/legal-actions",
    tags=["play"],
    summary="The token's seat's legal actions now (empty when it is not to move)",
)
async def legal_actions(
    match_id: MatchId,
    request: Request,
    access: AccessDep,
    positions: PositionsDep,
    seat: int | None = Query(None, ge=0, le=1),
) -> Any:
    acting = await access.seat_in(match_id, lambda: bearer(request, SEAT_CREDENTIAL), seat)
    player = acting.seats[acting.seat]
    if player is not None:  # rate-limited as actions are
        await access.limit_player(player)
    else:
        await access.limit_address(request)
    body = await positions.legal_actions(match_id, acting.seat)
    return Response(orjson.dumps(body), media_type="application/json")
