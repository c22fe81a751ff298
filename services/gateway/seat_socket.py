"""The seat socket: `GET /v1/matches/{id}/play` upgraded to a WebSocket, a fast path for players and
bots (docs/api.md, "The seat socket"; docs/contract.md). What flows over an open socket is in
socket_session.py; this module opens it.

The credential is checked once, when the socket opens, by the rules of the HTTP actions
(Access.seat_in in auth.py): a seat token of this match, or the player credential of a seat's player. It
comes as `Authorization: Bearer <credential>` or, from a client that cannot set headers (a
browser), as the subprotocol `bearer.<credential>` offered beside `plylog.v1` (never in the URL,
which ends up in logs). `?seat=N` picks the seat of a player credential that holds both.

A socket that may not open is accepted, told {"type": "error", "code", "message"} and closed with
4000 + the status the same HTTP request would get: 4401 no credential or a bad one, 4403 another
match's token or a seat the credential does not hold, 4404 an unknown match, 4422 a malformed
match id or `seat`, 4429 the client's live streams at their cap (PLYLOG_STREAMS_PER_CLIENT, counted together
with the SSE streams), 4503 Redis unavailable.
"""

from __future__ import annotations

import contextlib
import logging

import orjson
from fastapi import APIRouter, WebSocket
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from schemas.base import MATCH_ID_RULE, is_match_id

from .auth import bearer, client_address
from .errors import ApiError
from .matches import seat_player
from .metrics import Metrics
from .resources import SeatSocketsDep
from .server import connection_closed
from .socket_session import SeatSockets, SocketSession, close_reason

log = logging.getLogger("plylog.gateway.socket")
router = APIRouter()
SUBPROTOCOL = "plylog.v1"
BEARER_PROTOCOL = "bearer."
HELP = (
    f"a seat token (or the seat's player credential; a browser offers the subprotocols {SUBPROTOCOL} and "
    f"{BEARER_PROTOCOL}<credential>)"
)  # bearer() adds: "is required: send `Authorization: Bearer <credential>`"


@router.websocket("/v1/matches/{match_id}/play")
async def play(websocket: WebSocket, match_id: str, sockets: SeatSocketsDep) -> None:
    metrics, leases = sockets.metrics, sockets.leases
    offered = list(websocket.scope.get("subprotocols") or [])
    await websocket.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
    if not is_match_id(match_id):  # before any key is named after it
        await refuse(metrics, websocket, 4422, "malformed", f"{match_id[:80]!r} is not a match id ({MATCH_ID_RULE})")
        return
    try:
        seat, seats = await _open(sockets, websocket, match_id, offered)
        lease = await leases.take(client_address(websocket))
    except ApiError as error:
        await refuse(metrics, websocket, 4000 + error.status, error.code, error.message)
        return
    except (RedisConnectionError, RedisTimeoutError) as error:
        await refuse(metrics, websocket, 4503, "unavailable", f"Redis is unavailable ({type(error).__name__}); retry")
        return
    try:
        await SocketSession(sockets, websocket, match_id, seat, seats).run()
    finally:
        await connection_closed(websocket.scope)  # it counts until its connection is gone
        leases.release(lease)


async def _open(
    sockets: SeatSockets, websocket: WebSocket, match_id: str, offered: list[str]
) -> tuple[int, list[str | None]]:
    """(the seat the socket plays, the match's seats), or the ApiError the HTTP actions would raise."""
    wanted = _wanted_seat(websocket.query_params.get("seat"))
    acting = await sockets.access.seat_in(match_id, lambda: _credential(websocket, offered), wanted, wanted_first=True)
    seat_player(match_id, acting.seat, acting.seats)  # 403 while the seat has no player
    return acting.seat, acting.seats


def _wanted_seat(raw: str | None) -> int | None:
    if raw is None:
        return None
    if raw not in ("0", "1"):
        raise ApiError(422, "malformed", f"seat must be 0 or 1, not {raw[:20]!r}")
    return int(raw)


def _credential(websocket: WebSocket, offered: list[str]) -> str:
    for protocol in offered:
        if protocol.startswith(BEARER_PROTOCOL) and len(protocol) > len(BEARER_PROTOCOL):
            return protocol[len(BEARER_PROTOCOL) :]
    return bearer(websocket, HELP)


async def refuse(metrics: Metrics, websocket: WebSocket, code: int, error_code: str, message: str) -> None:
    """Tell the client why, then close with `code` (the reason: the message, cut to what a close frame holds)."""
    metrics.socket_closes.labels(str(code)).inc()
    log.info("seat socket %s refused: %d %s", websocket.url.path, code, message)
    with contextlib.suppress(Exception):  # the client may be gone already
        await websocket.send_text(orjson.dumps({"type": "error", "code": error_code, "message": message}).decode())
        await websocket.close(code, close_reason(message))
