"""Seat tokens: proof that the bearer holds one seat of one match.

A token is `<match_id>.<seat>.<mac>`, where mac = base64url(HMAC-SHA256(secret,
"plylog-seat-v1|<match_id>|<seat>")). Stateless: any gateway with the same secret checks it.
Carrying the match id and seat in clear lets the gateway tell a forged token (401) from a
genuine token of another match or seat (403).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from .identity import same


class InvalidToken(ValueError):
    """Not a token this gateway issued (malformed or wrong signature)."""


@dataclass(frozen=True)
class Seat:
    match_id: str
    seat: int


class SeatTokens:
    def __init__(self, secret: bytes):
        self._secret = secret

    def _mac(self, match_id: str, seat: int) -> str:
        digest = hmac.new(self._secret, f"plylog-seat-v1|{match_id}|{seat}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def issue(self, match_id: str, seat: int) -> str:
        return f"{match_id}.{seat}.{self._mac(match_id, seat)}"

    @staticmethod
    def looks_like_seat_token(token: str) -> bool:
        """Of the shape <match_id>.<seat>.<signature> (no other credential has a 0 or 1 in the middle)."""
        parts = token.split(".")
        return len(parts) == 3 and parts[1] in ("0", "1") and bool(parts[0])

    def verify(self, token: str) -> Seat:
        if not self.looks_like_seat_token(token):
            raise InvalidToken("not a seat token (expected <match_id>.<seat>.<signature>)")
        match_id, seat, mac = token.split(".")
        if not same(mac, self._mac(match_id, int(seat))):
            raise InvalidToken("the seat token's signature is wrong (not issued by this service)")
        return Seat(match_id, int(seat))
