"""Notification endpoints and preferences (docs/notifications.md): a player registers webhooks and
e-mail addresses for their own notifications and chooses which kinds and channels; the operator
registers the platform's endpoints, which get every player's notifications. The notifier service
reads what these routes write (services/common/notify_store.py). A player's address or URL is
personal data: it goes into their sealed profile (names.py, docs/personal-data.md), and Redis keeps
the endpoint without it; the platform's endpoints keep theirs in Redis."""

from __future__ import annotations

import functools
import os
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import Field

from services.common.notify_store import (
    CHANNELS,
    KINDS,
    PLATFORM,
    TARGET_FIELD,
    EndpointProblem,
    Guard,
    Registry,
    email_address,
    guard_of,
    public,
    webhook_url,
)
from services.common.settings import load

from .errors import ApiError
from .matches import Body
from .names import Names
from .resources import AccessDep, NamesDep, ProjectionDep

router = APIRouter()
Kind = Literal["your_move", "invited", "match_over", "clock_low"]
Channel = Literal["webhook", "email"]


class NewEndpoint(Body):
    channel: Channel
    url: str | None = Field(default=None, max_length=2048, description="webhook: an http(s) URL")
    address: str | None = Field(default=None, max_length=512, description="email: the address")
    platform: bool = Field(default=False, description="operator only: an endpoint of the platform (every player's)")


class Preferences(Body):
    kinds: list[Kind] = Field(max_length=len(KINDS), description=f"of {', '.join(KINDS)}")
    channels: list[Channel] = Field(max_length=len(CHANNELS), description=f"of {', '.join(CHANNELS)}")


@functools.cache
def _guard() -> Guard:
    return guard_of(load(), os.environ)


async def _owner(request: Request, access: AccessDep, platform: bool) -> str:
    identity = access.identify(request)
    if platform and not identity.operator:
        raise ApiError(403, "forbidden", "only the operator registers the platform's endpoints")
    if identity.operator and not platform:
        raise ApiError(422, "malformed", "the operator has no notifications of its own; use platform endpoints")
    await access.limit_address(request)
    return PLATFORM if platform else identity.player


def _registry(projection: ProjectionDep) -> Registry:
    return Registry(projection.client, projection.keys.prefix)


@router.get("/v1/notifications/endpoints", tags=["notifications"], summary="Your notification endpoints")
async def list_endpoints(
    request: Request, access: AccessDep, projection: ProjectionDep, names: NamesDep, platform: bool = Query(False)
) -> Any:
    owner = await _owner(request, access, platform)
    found = await _registry(projection).endpoints(owner)
    contacts = names.contacts(owner) if owner != PLATFORM else {}
    return {"endpoints": [public(_with_target(e, contacts.get(e["id"]))) for e in found]}


def _with_target(endpoint: dict[str, Any], target: str | None) -> dict[str, Any]:
    """A player's endpoint as its owner sees it: with its address from their profile, when it opens."""
    if target is None or TARGET_FIELD[endpoint["channel"]] in endpoint:
        return endpoint
    return {**endpoint, TARGET_FIELD[endpoint["channel"]]: target}


@router.post(
    "/v1/notifications/endpoints",
    tags=["notifications"],
    status_code=201,
    summary="Register a webhook or e-mail address (a webhook's signing secret is in this answer only)",
)
async def add_endpoint(
    body: NewEndpoint, request: Request, access: AccessDep, projection: ProjectionDep, names: NamesDep
) -> Any:
    owner = await _owner(request, access, body.platform)
    try:
        target = _target(body)
        created_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if owner == PLATFORM:
            return await _registry(projection).add(owner, body.channel, target, created_at)
        if names.tables.erased(owner):
            raise ApiError(410, "erased", "this player was erased; their profile takes no new address")
        endpoint = await _registry(projection).add(owner, body.channel, None, created_at)
    except EndpointProblem as problem:
        raise ApiError(422, "bad_endpoint", str(problem)) from None
    return await _seal_target(names, _registry(projection), owner, endpoint, target)


def _target(body: NewEndpoint) -> str:
    """The endpoint's URL or address, validated."""
    if body.channel == "webhook":
        if body.url is None or body.address is not None:
            raise EndpointProblem('a webhook has a "url" (and no "address")')
        webhook_url(body.url, _guard())
        return body.url
    if body.address is None or body.url is not None:
        raise EndpointProblem('an e-mail endpoint has an "address" (and no "url")')
    return email_address(body.address)


async def _seal_target(names: Names, registry: Registry, owner: str, endpoint: dict[str, Any], target: str) -> Any:
    """The address into the owner's sealed profile, once the endpoint holds its place (the cap is
    checked in Redis); if the profile cannot be written, the endpoint goes too."""
    try:
        await names.set_contact(owner, endpoint["id"], target)
    except ApiError:
        await registry.remove(owner, endpoint["id"])
        raise
    return _with_target(endpoint, target)


@router.delete("/v1/notifications/endpoints/{endpoint_id}", tags=["notifications"], summary="Remove an endpoint")
async def remove_endpoint(
    endpoint_id: str,
    request: Request,
    access: AccessDep,
    projection: ProjectionDep,
    names: NamesDep,
    platform: bool = Query(False),
) -> Any:
    owner = await _owner(request, access, platform)
    if not await _registry(projection).remove(owner, endpoint_id[:64]):
        raise ApiError(404, "no_such_endpoint", f"you have no endpoint {endpoint_id[:64]!r}")
    if owner != PLATFORM:
        await names.set_contact(owner, endpoint_id[:64], None)
    return {"removed": endpoint_id}


@router.get("/v1/notifications/preferences", tags=["notifications"], summary="Which kinds and channels you get")
async def get_preferences(request: Request, access: AccessDep, projection: ProjectionDep) -> Any:
    return await _registry(projection).preferences(await _owner(request, access, False))


@router.put("/v1/notifications/preferences", tags=["notifications"], summary="Choose which kinds and channels")
async def put_preferences(body: Preferences, request: Request, access: AccessDep, projection: ProjectionDep) -> Any:
    owner = await _owner(request, access, False)
    return await _registry(projection).set_preferences(owner, list(body.kinds), list(body.channels))


@router.get(
    "/v1/notifications/deadletters",
    tags=["notifications"],
    summary="Your latest deliveries that failed for good, with the reason",
)
async def dead_letters(
    request: Request,
    access: AccessDep,
    projection: ProjectionDep,
    platform: bool = Query(False),
    limit: int = Query(50, ge=1, le=200),
) -> Any:
    owner = await _owner(request, access, platform)
    return {"dead_letters": await _registry(projection).dead_letters(owner, limit)}
