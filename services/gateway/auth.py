"""Who a request comes from: its bearer credential (a seat token, a player credential, the
operator key), its client address, and the rate limits keyed by what the caller cannot choose (the cap
on live streams per client address is in stream_leases.py)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.requests import HTTPConnection

from .app import Gateway
from .errors import ApiError
from .identity import Identity, InvalidCredential
from .tokens import InvalidToken
from .tokens import Seat as SeatClaim

WWW_AUTHENTICATE = {"WWW-Authenticate": "Bearer"}


def gw(request: HTTPConnection) -> Gateway:
    return request.app.state.gateway


def bearer(request: HTTPConnection, what: str) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "unauthorized",
            f"{what} is required: send `Authorization: Bearer <credential>`",
            headers=WWW_AUTHENTICATE,
        )
    return token.strip()


def identity_of(request: Request) -> Identity:
    """The player (or operator) the bearer credential proves (401 otherwise)."""
    credential = bearer(request, "a player credential (POST /v1/players gives a guest one) or the operator key")
    try:
        return gw(request).auth.identify(credential)
    except InvalidCredential as error:
        raise ApiError(401, "unauthorized", str(error), headers=WWW_AUTHENTICATE) from None


def seat_of(
    request: Request, match_id: str, seats: list[str | None] | None = None, to_move: list[int] | None = None
) -> SeatClaim:
    """The seat the bearer may act for: a seat token of this match (401 forged, 403 another match),
    or a player credential whose player holds a seat (the one to move when they hold both)."""
    credential = bearer(request, "a seat token (from creating or joining the match) or your player credential")
    return seat_claim(gw(request), credential, match_id, seats, to_move)


def seat_claim(
    gateway: Gateway,
    credential: str,
    match_id: str,
    seats: list[str | None] | None = None,
    to_move: list[int] | None = None,
) -> SeatClaim:
    """`seat_of` for a credential however it came (a header, a socket's subprotocol)."""
    if gateway.tokens.looks_like_seat_token(credential):
        try:
            claim = gateway.tokens.verify(credential)
        except InvalidToken as error:
            raise ApiError(401, "unauthorized", str(error), headers=WWW_AUTHENTICATE) from None
        if claim.match_id != match_id:
            raise ApiError(403, "forbidden", f"this seat token is for match {claim.match_id!r}, not {match_id!r}")
        return claim
    try:
        identity = gateway.auth.identify(credential)
    except InvalidCredential as error:
        raise ApiError(401, "unauthorized", f"not a seat token, and {error}", headers=WWW_AUTHENTICATE) from None
    held = [seat for seat, player in enumerate(seats or []) if player == identity.player]
    if not held:
        raise ApiError(403, "forbidden", f"{identity.player!r} holds no seat in {match_id!r}")
    moving = [seat for seat in held if seat in (to_move or [])]
    return SeatClaim(match_id, (moving or held)[0])


def client_address(request: HTTPConnection) -> str:
    """The client's address: the peer's, which app.py's proxy-header middleware has made the
    right-most X-Forwarded-For hop that is not a trusted proxy when the peer is one
    (PLYLOG_TRUSTED_PROXIES; nobody's header counts when none is named)."""
    return request.client.host if request.client else "unknown"


async def limit_player(request: Request, player: str) -> None:
    """Actions are limited per player: the one a credential or seat proves, never a name sent."""
    await player_limit(gw(request), player)


async def player_limit(gateway: Gateway, player: str) -> None:
    """`limit_player` where there is no request (an action sent over a socket)."""
    await _take(
        gateway, gateway.limiter.take(player), f"from {player!r}", gateway.config.rate_per_s, gateway.config.rate_burst
    )


async def limit_address(request: Request) -> None:
    """Creates, joins and new identities are limited per client address too (identities are free)."""
    gateway = gw(request)
    address = client_address(request)
    await _take(
        gateway,
        gateway.address_limiter.take(address),
        f"from {address}",
        gateway.config.address_rate_per_s,
        gateway.config.address_rate_burst,
    )


async def _take(gateway: Gateway, taking: Any, whom: str, rate: float, burst: float) -> None:
    verdict = await taking
    if not verdict.allowed:
        gateway.metrics.rate_limited.inc()
        raise ApiError(
            429,
            "rate_limited",
            f"too many requests {whom}: at most {rate:g}/s (bursts of {burst:g}); retry in {verdict.retry_after_ms} ms",
            headers={"Retry-After": str(verdict.retry_after_s)},
        )
