"""Who a request comes from: its bearer credential (a seat token, a player credential, the
operator key) and the seat it proves in a match, its client address, and the rate limits keyed by
what the caller cannot choose (the cap on live streams per client address is in stream_leases.py).
`Access` is one of the gateway's resources (resources.py): routes get it as `AccessDep`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import HTTPConnection

from services.common.projection import Projection

from .errors import ApiError
from .identity import Authenticator, Identity, InvalidCredential
from .matches import known_match
from .metrics import Metrics
from .ratelimit import RateLimiter, Verdict
from .tokens import InvalidToken, SeatTokens
from .tokens import Seat as SeatClaim

WWW_AUTHENTICATE = {"WWW-Authenticate": "Bearer"}
SEAT_CREDENTIAL = "a seat token (from creating or joining the match) or your player credential"


def bearer(connection: HTTPConnection, what: str) -> str:
    header = connection.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "unauthorized",
            f"{what} is required: send `Authorization: Bearer <credential>`",
            headers=WWW_AUTHENTICATE,
        )
    return token.strip()


def client_address(connection: HTTPConnection) -> str:
    """The client's address: the peer's, which app.py's proxy-header middleware has made the
    right-most X-Forwarded-For hop that is not a trusted proxy when the peer is one
    (PLYLOG_TRUSTED_PROXIES; nobody's header counts when none is named)."""
    return connection.client.host if connection.client else "unknown"


@dataclass(frozen=True)
class SeatInMatch:
    seat: int
    seats: list[str | None]  # the match's players, seat 0 first
    meta: dict[str, Any]  # the match's game and status (as the projection has them)


class Access:
    """Credentials (seat tokens, player credentials, the operator key) and the rate limits per player
    and per client address."""

    def __init__(
        self,
        tokens: SeatTokens,
        authenticator: Authenticator,
        player_limiter: RateLimiter,
        address_limiter: RateLimiter,
        projection: Projection,
        metrics: Metrics,
    ):
        self._projection = projection
        self.tokens = tokens
        self.authenticator = authenticator
        self._player_limiter = player_limiter
        self._address_limiter = address_limiter
        self._metrics = metrics

    def identify(self, connection: HTTPConnection) -> Identity:
        """The player (or operator) the bearer credential proves (401 otherwise)."""
        credential = bearer(connection, "a player credential (POST /v1/players gives a guest one) or the operator key")
        try:
            return self.authenticator.identify(credential)
        except InvalidCredential as error:
            raise ApiError(401, "unauthorized", str(error), headers=WWW_AUTHENTICATE) from None

    async def seat_in(
        self, match_id: str, credential: Callable[[], str], wanted: int | None, *, wanted_first: bool = False
    ) -> SeatInMatch:
        """The seat the credential may act for in the match, with the match's seats, game and status
        (404 unknown match, 401/403 as `seat_claim` says, 403 when `wanted` is another seat).
        `credential` is read once the match is known; `wanted_first`: a player holding both seats
        gets `wanted`, else the one to move."""
        meta = await known_match(self._projection, match_id, "seats", "status")
        seats = meta.get("seats") or [None, None]
        to_move = [wanted] if wanted_first and wanted is not None else await self._to_move(match_id, seats)
        claim = self.seat_claim(credential(), match_id, seats, to_move)
        if wanted is not None and wanted != claim.seat:
            raise ApiError(403, "forbidden", f"this credential is for seat {claim.seat}, not seat {wanted}")
        return SeatInMatch(claim.seat, seats, meta)

    async def _to_move(self, match_id: str, seats: list[str | None]) -> list[int] | None:
        """The seats to move, which only a player in both seats (hot seat) needs: reading and parsing
        the whole view for every other action was a tenth of the gateway's CPU per move."""
        if seats[0] is None or seats[0] != seats[1]:
            return None
        view = (await known_match(self._projection, match_id, "view")).get("view") or {}
        return view.get("to_move")

    def seat_claim(
        self,
        credential: str,
        match_id: str,
        seats: list[str | None] | None = None,
        to_move: list[int] | None = None,
    ) -> SeatClaim:
        """The seat a credential (from a header or a socket's subprotocol) may act for: a seat token of
        this match (401 forged, 403 another match), or a player credential whose player holds a seat
        (the one to move when they hold both)."""
        if self.tokens.looks_like_seat_token(credential):
            try:
                claim = self.tokens.verify(credential)
            except InvalidToken as error:
                raise ApiError(401, "unauthorized", str(error), headers=WWW_AUTHENTICATE) from None
            if claim.match_id != match_id:
                raise ApiError(403, "forbidden", f"this seat token is for match {claim.match_id!r}, not {match_id!r}")
            return claim
        try:
            identity = self.authenticator.identify(credential)
        except InvalidCredential as error:
            raise ApiError(401, "unauthorized", f"not a seat token, and {error}", headers=WWW_AUTHENTICATE) from None
        held = [seat for seat, player in enumerate(seats or []) if player == identity.player]
        if not held:
            raise ApiError(403, "forbidden", f"{identity.player!r} holds no seat in {match_id!r}")
        moving = [seat for seat in held if seat in (to_move or [])]
        return SeatClaim(match_id, (moving or held)[0])

    async def limit_player(self, player: str) -> None:
        """Actions are limited per player: the one a credential or seat proves, never a name sent."""
        limiter = self._player_limiter
        await self._take(limiter.take(player), f"from {player!r}", limiter.rate_per_s, limiter.burst)

    async def limit_address(self, connection: HTTPConnection) -> None:
        """Creates, joins and new identities are limited per client address too (identities are free)."""
        address = client_address(connection)
        limiter = self._address_limiter
        await self._take(limiter.take(address), f"from {address}", limiter.rate_per_s, limiter.burst)

    async def _take(self, taking: Awaitable[Verdict], whom: str, rate: float, burst: float) -> None:
        verdict = await taking
        if not verdict.allowed:
            self._metrics.rate_limited.inc()
            raise ApiError(
                429,
                "rate_limited",
                f"too many requests {whom}: at most {rate:g}/s (bursts of {burst:g}); "
                f"retry in {verdict.retry_after_ms} ms",
                headers={"Retry-After": str(verdict.retry_after_s)},
            )
