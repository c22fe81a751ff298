"""Who is calling: the player a credential proves, or the operator.

Credentials (all in `Authorization: Bearer <credential>`):

- **guest token** (`PLYLOG_AUTH=guest`, the default): `POST /v1/players {name}` makes a new
  identity with an opaque id `g~<16 random characters>` (the name goes into the player's sealed
  profile, docs/personal-data.md; ids made before, `<name>~<6 random characters>`, stay valid)
  and its token `g1.<player, base64url>.<HMAC>`. Anyone may make identities; nobody can make one
  for a player id that exists (the id is random and the token is signed with PLYLOG_SECRET), so
  nobody can act for, or give a rated result to, someone else.
- **platform token** (`PLYLOG_AUTH=jwt`): a JWT of the platform's own accounts, checked with a
  configured key (PyJWT): its claim `PLYLOG_JWT_PLAYER_CLAIM` (default `sub`) is the player id.
- **operator key** (`PLYLOG_OPERATOR_KEY`, else the key made once into $PLYLOG_HOME/operator.key):
  a platform's server that vouches for its players' consent: it may create matches for named
  players and get every seat token.

Player ids starting `bot:` or `plylog-` belong to plylog's own bots and services: no credential
names one, however it is written (the check is on the id after Unicode NFKC normalisation and
case folding: `PLYLOG-x`, `ｐｌｙｌｏｇ-x` and `Bot:x` are refused too). A player id holds no
control or format characters (a line break, a zero-width joiner, a right-to-left mark).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from services.common.profiles import opaque_guest_id

RESERVED_PREFIXES = ("bot:", "plylog-")
GUEST_NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")  # the whole name (fullmatch)
UNSEEN = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})  # Unicode categories no player id holds
OPERATOR = "plylog-operator"


class InvalidCredential(ValueError):
    """Not a credential this gateway accepts; the message says why (for a 401)."""


@dataclass(frozen=True)
class Identity:
    player: str  # for the operator: "plylog-operator"
    via: str  # "guest" | "jwt" | "operator"

    @property
    def operator(self) -> bool:
        return self.via == "operator"


@dataclass(frozen=True)
class JwtSettings:
    key: Any  # a shared secret (bytes) or a public key (PEM text)
    algorithms: tuple[str, ...]
    audience: str | None = None
    issuer: str | None = None
    player_claim: str = "sub"


def reserved(player: str) -> bool:
    """Whether `player` names one of plylog's own ids, however written (NFKC, case folded)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", player).casefold())
    return folded.startswith(RESERVED_PREFIXES)


def player_problem(player: str) -> str:
    """Why `player` cannot be the id a credential proves (empty when it can)."""
    if any(unicodedata.category(c) in UNSEEN for c in player):
        return "a player id holds no control, format or line separator characters"
    if reserved(player):
        return f"player ids starting {' or '.join(RESERVED_PREFIXES)} (in any case or form) are plylog's own"
    return ""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def same(given: str, expected: str) -> bool:
    """Constant-time comparison that also takes text that is not ASCII (a forged credential)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode())


class Authenticator:
    def __init__(self, secret: bytes, mode: str, operator_key: str | None, jwt: JwtSettings | None = None):
        self._secret = secret
        self.mode = mode
        self._operator_key = operator_key
        self._jwt = jwt

    # --- guests ------------------------------------------------------------------------------------
    def new_guest(self, name: str) -> tuple[str, str]:
        """(player id, guest token) of a new identity whose display name is `name` (checked:
        GUEST_NAME); the id is opaque: the name is kept in the player's profile, not in the id."""
        if self.mode != "guest":
            raise InvalidCredential("guest identities are off here (PLYLOG_AUTH=jwt): sign in with your platform")
        if not GUEST_NAME.fullmatch(name):
            raise ValueError("a name is 1 to 40 letters, digits, '_', '.' or '-'")
        if reserved(name):
            raise ValueError(f"names starting {' or '.join(RESERVED_PREFIXES)} (in any case) are plylog's own")
        player = opaque_guest_id()
        return player, self._guest_token(player)

    def _guest_token(self, player: str) -> str:
        return f"g1.{_b64(player.encode())}.{self._mac('plylog-guest-v1', player)}"

    def _mac(self, purpose: str, text: str) -> str:
        return _b64(hmac.new(self._secret, f"{purpose}|{text}".encode(), hashlib.sha256).digest())

    # --- any credential ----------------------------------------------------------------------------
    def identify(self, credential: str) -> Identity:
        """The identity a credential proves; InvalidCredential says why not."""
        if self._operator_key and same(credential, self._operator_key):
            return Identity(OPERATOR, "operator")
        if credential.startswith("g1."):
            return self._guest(credential)
        if self._jwt is not None and credential.count(".") == 2:
            return self._platform(credential)
        raise InvalidCredential(self._expected())

    def _expected(self) -> str:
        if self.mode == "guest":
            return 'not a player credential: get one with POST /v1/players {"name": ...} (a guest token g1.…)'
        return "not a player credential: send your platform's token (a JWT) or the operator key"

    def _guest(self, credential: str) -> Identity:
        if self.mode != "guest":
            raise InvalidCredential("guest tokens are not accepted here (PLYLOG_AUTH=jwt)")
        parts = credential.split(".")
        try:
            player = _unb64(parts[1]).decode() if len(parts) == 3 else ""
        except (binascii.Error, UnicodeDecodeError, ValueError):
            player = ""
        if not player or not same(parts[2], self._mac("plylog-guest-v1", player)):
            raise InvalidCredential("the guest token's signature is wrong (not issued by this service)")
        if problem := player_problem(player):  # a token minted before names were checked as now
            raise InvalidCredential(f"this guest identity is no longer accepted: {problem}")
        return Identity(player, "guest")

    def _platform(self, credential: str) -> Identity:
        import jwt

        settings = self._jwt
        if settings is None:
            raise InvalidCredential("platform tokens are off here (PLYLOG_AUTH=guest)")
        try:
            claims = jwt.decode(
                credential,
                settings.key,
                algorithms=list(settings.algorithms),
                audience=settings.audience,
                issuer=settings.issuer,
                options={"require": ["exp", settings.player_claim], "verify_aud": bool(settings.audience)},
            )
        except jwt.PyJWTError as error:
            raise InvalidCredential(f"the platform token is not valid: {error}") from None
        player = claims.get(settings.player_claim)
        if not isinstance(player, str) or not 0 < len(player) <= 64:
            raise InvalidCredential(
                f"the platform token's {settings.player_claim!r} claim is not a player id (1-64 characters)"
            )
        if problem := player_problem(player):
            raise InvalidCredential(f"the platform token's {settings.player_claim!r} claim: {problem}")
        return Identity(player, "jwt")
