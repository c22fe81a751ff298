"""Players' display names and their erasure over HTTP (docs/personal-data.md): names for a batch of
player ids (the web client shows them beside the ids views keep), and the operator's erasure."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from .errors import ApiError
from .identity import reserved
from .resources import AccessDep, NamesDep

router = APIRouter()
NAMES_AT_ONCE = 200


@router.get("/v1/names", tags=["players"], summary="Display names of players (null: show the id)")
async def names(
    names: NamesDep, player: list[str] = Query(default_factory=list, max_length=NAMES_AT_ONCE)
) -> dict[str, Any]:
    return {"names": names.names(p for p in player if 0 < len(p) <= 64)}


@router.post(
    "/v1/players/{player}/erase",
    tags=["players"],
    summary="Operator only: erase a player's personal data (their profile's key); ratings and results stay",
)
async def erase(
    player: Annotated[str, Path(min_length=1, max_length=64)], request: Request, access: AccessDep, names: NamesDep
) -> dict[str, Any]:
    if not access.identify(request).operator:
        raise ApiError(403, "forbidden", "only the operator erases players")
    if reserved(player):
        raise ApiError(422, "malformed", f"{player!r} is one of plylog's own ids: it holds no personal data")
    erased = await names.erase(player)
    return {
        "player": player,
        "erased": True,
        "had_data": erased,
        "name": names.names([player])[player],
    }
