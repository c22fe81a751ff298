"""What the HTTP actions and the seat socket share: a match the projection knows, the seat's player,
and an action sent for a seat turned into its move record (or refused at the door)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from games.core import Rejected
from games.match import check_action
from schemas.base import EventId, Seat
from schemas.tournament import DIRECTOR
from services.common.projection import Projection

from .errors import ApiError
from .submit import move_record


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ActionRequest(Body):
    action: dict[str, Any] = Field(description='a lifecycle or game action, e.g. {"type": "resign"}')
    event_id: EventId | None = Field(default=None, description="idempotency key; omitted: a new one")
    expected_seq: int | None = Field(
        default=None, ge=0, le=2**53, strict=True, description="reject as stale unless the match is at this seq"
    )
    seat: Seat | None = Field(default=None, description="the seat you act for; must be the token's")


async def known_match(projection: Projection, match_id: str, *fields: str) -> dict[str, Any]:
    """The match's `game` and `fields` from the projection (404 while it does not know the match)."""
    found = await projection.match_fields(match_id, *fields)
    if found is None:
        raise ApiError(404, "unknown_match", f"no match {match_id!r} (or it is not projected yet)")
    return found


def seat_player(match_id: str, seat: int, seats: list[str | None]) -> str:
    """The player who holds `seat` (403 while nobody does)."""
    player = seats[seat]
    if player is None:
        raise ApiError(403, "forbidden", f"seat {seat} of {match_id!r} has no player yet")
    return player


def refuse_if_over(match_id: str, status: str | None) -> None:
    """409 for an action to a match the projection shows as over (the rules would refuse it)."""
    if status == "over":
        raise ApiError(409, "match_over", f"match {match_id!r} is over; it takes no more actions")


def seat_action(match_id: str, seat: int, seats: list[str | None], body: ActionRequest, game: str) -> dict[str, Any]:
    """The move record of an action sent for `seat` (over HTTP or a socket), played by the seat's
    player; 403/422 as the case may be. The action must have the shape of a lifecycle action or of
    one of the game's actions (the rules' own check: what they would refuse is not written)."""
    if body.seat is not None and body.seat != seat:
        raise ApiError(403, "forbidden", f"this credential is for seat {seat}, not seat {body.seat}")
    if not isinstance(body.action.get("type"), str):
        raise ApiError(422, "malformed", 'action: needs a "type" (e.g. {"type": "resign"})')
    if body.action["type"] == "adjudicate":  # the rules would reject it `forbidden`: not worth a log record
        raise ApiError(
            403, "forbidden", f"a seat may not adjudicate: only the tournament service ({DIRECTOR}) does, on the log"
        )
    try:
        if game:  # (unknown only while a rebuild empties the projection: the rules check it then)
            check_action(game, body.action)
    except Rejected as rejection:
        raise ApiError(422, rejection.code, rejection.message) from None
    return move_record(match_id, seat_player(match_id, seat, seats), body.action, body.event_id, body.expected_seq)


def action_pending(record: dict[str, Any], then: str) -> dict[str, Any]:
    """The answer to an action whose result did not come within the wait time."""
    return {
        "status": "pending",
        "match_id": record["match_id"],
        "event_id": record["event_id"],
        "message": f"written to the log; no result within the wait time ({then})",
    }
