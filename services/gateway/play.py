"""Playing over HTTP: identities, creating and joining matches, seat tokens, actions.

A seat token is handed out only to the player who holds the seat (or to the operator): at a
create the rules accepted in that very request, at an accepted join, or later from
`GET /v1/matches/{id}/tokens` with the player's credential. A create naming another player seats
nobody but the creator: the other seat is reserved for that player, who takes it with their own
credential (`join`), so nobody plays — or loses a rated match — without having said so.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from typing import Any

import orjson
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from games.core import Rejected
from games.match import check_action
from games.match import create_match as rules_create
from games.registry import get_game
from schemas.base import EventId, GameName, MatchId, PlayerId, Seat
from schemas.lifecycle import AnyClock
from services.common import bot_directory

from .app import Gateway
from .auth import gw, identity_of, limit_address, limit_player, seat_of
from .errors import ApiError
from .history import Folded, FoldPending, HistoryUnavailable
from .identity import Identity, player_problem
from .submit import move_record

BOT_PREFIX = "bot:"

router = APIRouter()
MAX_WAIT_S = 60.0


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewPlayer(Body):
    name: str = Field(description="1-40 letters, digits, '_', '.' or '-'; the id gets a random suffix: ann~k3f9xq")


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


class JoinRequest(Body):
    player: PlayerId | None = Field(
        default=None, description="operator only: the player who joins (others join as their credential's player)"
    )


class ActionRequest(Body):
    action: dict[str, Any] = Field(description='a lifecycle or game action, e.g. {"type": "resign"}')
    event_id: EventId | None = Field(default=None, description="idempotency key; omitted: a new one")
    expected_seq: int | None = Field(
        default=None, ge=0, le=2**53, strict=True, description="reject as stale unless the match is at this seq"
    )
    seat: Seat | None = Field(default=None, description="the seat you act for; must be the token's")


# --- helpers -------------------------------------------------------------------------------------------
def _wait_timeout(gateway: Gateway, timeout: float | None) -> float:
    return min(timeout, MAX_WAIT_S) if timeout is not None else gateway.config.wait_timeout_s


async def known_match(gateway: Gateway, match_id: str, *fields: str) -> dict[str, Any]:
    found = await gateway.projection.match_fields(match_id, *fields)
    if found is None:
        raise ApiError(404, "unknown_match", f"no match {match_id!r} (or it is not projected yet)")
    return found


async def _refuse_known_id(gateway: Gateway, match_id: str) -> None:
    """A chosen id of a match the projection knows is refused here, not only by the rules worker:
    the worker forgets a finished match (games.fold.FORGET_FINISHED_AFTER) and would create a new
    one under its id, while its history stays the old match's."""
    found = await gateway.projection.match_fields(match_id, "status")
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


async def _playable_bots(gateway: Gateway, game: str, wanted: list[str | None]) -> set[str]:
    """The `bot:<id>` players of `wanted` a running bot service plays for `game` (422 for others)."""
    asked = [p for p in wanted if p is not None and p.startswith(BOT_PREFIX)]
    if not asked:
        return set()
    known = {f"{BOT_PREFIX}{e.bot_id}": e for e in await bot_directory.entries(gateway.redis, gateway.projection.keys)}
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


def _tokens_for(gateway: Gateway, identity: Identity, match_id: str, seats: list[str | None]) -> list[str | None]:
    return [
        gateway.tokens.issue(match_id, seat)
        if player is not None and (identity.operator or player == identity.player)
        else None
        for seat, player in enumerate(seats)
    ]


# --- identities ----------------------------------------------------------------------------------------
@router.post(
    "/v1/players", status_code=201, tags=["play"], summary="A new guest identity: its player id and token (guest mode)"
)
async def new_player(body: NewPlayer, request: Request) -> Any:
    gateway = gw(request)
    await limit_address(request)
    try:
        player, token = gateway.auth.new_guest(body.name)
    except ValueError as error:  # InvalidCredential (jwt mode) too
        status = 403 if gateway.auth.mode != "guest" else 422
        raise ApiError(status, "forbidden" if status == 403 else "malformed", str(error)) from None
    return JSONResponse({"player": player, "token": token}, 201)


@router.get("/v1/whoami", tags=["play"], summary="The player the bearer credential proves")
async def whoami(request: Request) -> Any:
    identity = identity_of(request)
    return {"player": identity.player, "via": identity.via}


@router.get("/v1/bots", tags=["play"], summary="The bots you can play against, per game, weak to strong")
async def bots(request: Request, game: GameName | None = None) -> Any:
    from games.bots import LEVELS

    gateway = gw(request)
    entries = {e.bot_id: e for e in await bot_directory.entries(gateway.redis, gateway.projection.keys)}
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
async def create_match(body: NewMatch, request: Request, timeout: float | None = Query(None, gt=0)) -> Any:
    gateway = gw(request)
    identity = identity_of(request)
    if body.creator is not None and not identity.operator and body.creator != identity.player:
        raise ApiError(403, "forbidden", f"you create matches as {identity.player!r}; `creator` is the operator's")
    await limit_address(request)
    await limit_player(request, identity.player)
    seats, invited = _seating(identity, body.seats, await _playable_bots(gateway, body.game, body.seats))
    if body.match_id is not None:
        await _refuse_known_id(gateway, body.match_id)
    match_id = body.match_id or f"m-{uuid.uuid4().hex[:12]}"
    action: dict[str, Any] = {"type": "create", "game": body.game, "seats": seats, "options": body.options}
    if body.clock is not None:
        action["clock"] = body.clock.model_dump()
    if any(invited):
        action["invited"] = invited
    record = move_record(match_id, body.creator or identity.player, action)
    try:  # the rules' own create, at the door: a create they would refuse is not written to the log
        rules_create(match_id, record["player"], action, record["at"])
    except Rejected as rejection:
        raise ApiError(422, rejection.code, rejection.message) from None
    counted = await gateway.bot_cap.for_create(identity, body.creator, seats, match_id)
    submitting = gateway.submitter.submit(record, wait=True, timeout_s=_wait_timeout(gateway, timeout))
    result = await gateway.bot_cap.submitted(counted, submitting)
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
            "tokens": _tokens_for(gateway, identity, match_id, seats),
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
    body: JoinRequest | None = None,
    timeout: float | None = Query(None, gt=0),
) -> Any:
    gateway = gw(request)
    identity = identity_of(request)
    named = body.player if body is not None else None
    if named is not None and not identity.operator and named != identity.player:
        raise ApiError(403, "forbidden", f"you join as {identity.player!r}; naming another player is the operator's")
    if identity.operator and named is None:
        raise ApiError(422, "malformed", 'the operator joins for a named player: send {"player": ...}')
    player = named or identity.player
    seats = (await known_match(gateway, match_id, "seats")).get("seats")
    await limit_address(request)
    await limit_player(request, player)
    counted = await gateway.bot_cap.for_join(player, match_id, seats)
    record = move_record(match_id, player, {"type": "join"})
    submitting = gateway.submitter.submit(record, wait=True, timeout_s=_wait_timeout(gateway, timeout))
    result = await gateway.bot_cap.submitted(counted, submitting)
    if result is None:
        return _pending(record, "you have joined")
    if result["status"] != "accepted" or result["duplicate"]:
        raise _rejection(result, 409)
    joined = next(e for e in result["events"] if e["type"] == "seat_joined")
    return {
        "match_id": match_id,
        "seat": joined["seat"],
        "player": player,
        "token": gateway.tokens.issue(match_id, joined["seat"]),
        "seq": result["seq"],
        "view": result["view"],
    }


@router.get(
    "/v1/matches/{match_id}/tokens",
    tags=["play"],
    summary="The seat tokens of the seats the caller holds (the operator: every seat)",
)
async def seat_tokens(match_id: MatchId, request: Request) -> Any:
    gateway = gw(request)
    identity = identity_of(request)
    seats = (await known_match(gateway, match_id, "seats")).get("seats") or [None, None]
    tokens = _tokens_for(gateway, identity, match_id, seats)
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
    wait: bool = False,
    timeout: float | None = Query(None, gt=0),
) -> Any:
    gateway = gw(request)
    claim, seats, meta = await _seat(request, match_id, body.seat)
    refuse_if_over(match_id, (meta.get("view") or {}).get("status"))
    record = seat_action(match_id, claim.seat, seats, body, meta["game"])
    await limit_player(request, record["player"])
    result = await gateway.submitter.submit(record, wait=wait, timeout_s=_wait_timeout(gateway, timeout))
    if not wait:
        return {"status": "submitted", "match_id": match_id, "event_id": record["event_id"], "at": record["at"]}
    if result is None:
        return JSONResponse(action_pending(record, "watch the stream"), 202)
    return JSONResponse(result, 200)


def action_pending(record: dict[str, Any], then: str) -> dict[str, Any]:
    """The answer to an action whose result did not come within the wait time."""
    return {
        "status": "pending",
        "match_id": record["match_id"],
        "event_id": record["event_id"],
        "message": f"written to the log; no result within the wait time ({then})",
    }


def seat_action(match_id: str, seat: int, seats: list[str | None], body: ActionRequest, game: str) -> dict[str, Any]:
    """The move record of an action sent for `seat` (over HTTP or a socket), played by the seat's
    player; 403/422 as the case may be. The action must have the shape of a lifecycle action or of
    one of the game's actions (the rules' own check: what they would refuse is not written)."""
    if body.seat is not None and body.seat != seat:
        raise ApiError(403, "forbidden", f"this credential is for seat {seat}, not seat {body.seat}")
    if not isinstance(body.action.get("type"), str):
        raise ApiError(422, "malformed", 'action: needs a "type" (e.g. {"type": "resign"})')
    try:
        if game:  # (unknown only while a rebuild empties the projection: the rules check it then)
            check_action(game, body.action)
    except Rejected as rejection:
        raise ApiError(422, rejection.code, rejection.message) from None
    return move_record(match_id, seat_player(match_id, seat, seats), body.action, body.event_id, body.expected_seq)


def refuse_if_over(match_id: str, status: str | None) -> None:
    """409 for an action to a match the projection shows as over (the rules would refuse it)."""
    if status == "over":
        raise ApiError(409, "match_over", f"match {match_id!r} is over; it takes no more actions")


def seat_player(match_id: str, seat: int, seats: list[str | None]) -> str:
    """The player who holds `seat` (403 while nobody does)."""
    player = seats[seat]
    if player is None:
        raise ApiError(403, "forbidden", f"seat {seat} of {match_id!r} has no player yet")
    return player


async def _seat(request: Request, match_id: str, wanted: int | None):
    """(the seat the bearer acts for, the match's seats, its game and view); 401/403/404 as the case may be."""
    meta = await known_match(gw(request), match_id, "seats", "view")
    seats = meta.get("seats") or [None, None]
    claim = seat_of(request, match_id, seats, (meta.get("view") or {}).get("to_move"))
    if wanted is not None and wanted != claim.seat:
        raise ApiError(403, "forbidden", f"this credential is for seat {claim.seat}, not seat {wanted}")
    return claim, seats, meta


async def folded(gateway: Gateway, match_id: str) -> Folded:
    meta = await known_match(gateway, match_id, "created_at")
    try:
        return await gateway.history.fold(match_id, meta.get("created_at") or "1970-01-01T00:00:00Z")
    except FoldPending as pending:
        raise ApiError(
            503,
            "unavailable",
            f"reading the match's log: {pending.folded_records} of its records folded so far, the most one "
            "request may (PLYLOG_WORK_BUDGET_MS); retry to go on",
            headers={"Retry-After": "1"},
        ) from None
    except HistoryUnavailable as error:
        raise ApiError(503, "unavailable", f"the match log cannot be read now: {error}") from None


@router.get(
    "/v1/matches/{match_id}/legal-actions",
    tags=["play"],
    summary="The token's seat's legal actions now (empty when it is not to move)",
)
async def legal_actions(match_id: MatchId, request: Request, seat: int | None = Query(None, ge=0, le=1)) -> Any:
    claim, seats, _ = await _seat(request, match_id, seat)
    if seats[claim.seat] is not None:  # rate-limited as actions are
        await limit_player(request, seats[claim.seat])
    else:
        await limit_address(request)
    body = await legal_actions_of(gw(request), match_id, claim.seat)
    return Response(orjson.dumps(body), media_type="application/json")


async def legal_actions_of(gateway: Gateway, match_id: str, seat: int) -> dict[str, Any]:
    """The legal actions of `seat` now, refolded from the match's log (the body of GET legal-actions):
    at most PLYLOG_LEGAL_ACTIONS_CAP of them, and as many as PLYLOG_WORK_BUDGET_MS of CPU lists
    (`truncated` when either cut the listing)."""
    state = (await folded(gateway, match_id)).current
    actions: list[dict[str, Any]] = []
    truncated, commit_listed = False, False
    if state is not None and seat in state.to_move():
        config = gateway.config
        listed, truncated = await asyncio.to_thread(
            _listing, state, seat, config.legal_actions_cap, config.work_budget_ms / 1000
        )
        commit_listed = any(a.get("type") == "commit" for a in listed)
        actions = _without_guessable_secrets(listed)
    body = {
        "match_id": match_id,
        "seat": seat,
        "seq": state.seq if state else 0,
        "status": state.status if state else None,
        "to_move": list(state.to_move()) if state else [],
        "actions": actions,
        "truncated": truncated,
    }
    if commit_listed:
        body["hint"] = (
            "commit: send the MM1 commitment of a code and salt of your own "
            '(sha256 hex of "MM1|<match>|<round>|<attempt>|<c,o,d,e>|<salt>"; docs/rules/mastermind.md)'
        )
    return body


def _listing(state, seat: int, cap: int, budget_s: float) -> tuple[list[dict[str, Any]], bool]:
    """(up to `cap` legal actions, whether there are more), listed until this thread has used
    `budget_s` of CPU: the games enumerate lazily, at a bounded cost per action."""
    started = time.thread_time()
    listed: list[dict[str, Any]] = []
    for action in get_game(state.game).legal_actions(state.board, seat):
        if len(listed) == cap or (len(listed) % 32 == 31 and time.thread_time() - started > budget_s):
            return listed, True
        listed.append(action)
    return listed, False


def _without_guessable_secrets(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules list Mastermind's set_code with a salt, and commit with a commitment, derived from
    public data (fine for bots, fatal for a person: the code could be recovered from the public
    commitment). set_code gets a fresh unguessable salt; commit is left out (the client makes its own)."""
    salt = secrets.token_hex(16)
    return [{**a, "salt": salt} if a.get("type") == "set_code" else a for a in actions if a.get("type") != "commit"]
