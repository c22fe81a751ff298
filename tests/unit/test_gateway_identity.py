"""Player identities and credentials (services/gateway/identity.py, tokens.py, config.py): guest
tokens nobody can make for another player, platform JWTs checked with the configured key, the
operator key, and forged credentials answered as forged (never an exception)."""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from services.common.settings import SettingsError
from services.gateway.config import OPERATOR_KEY_FILE, GatewayConfig
from services.gateway.identity import Authenticator, InvalidCredential, JwtSettings, player_problem
from services.gateway.tokens import InvalidToken, SeatTokens

SECRET = b"s" * 32
OPERATOR_KEY = "operator-key-0123456789"
HS_KEY = "platform-shared-secret-0123456789abcdef"


def guests() -> Authenticator:
    return Authenticator(SECRET, "guest", OPERATOR_KEY)


def test_a_guest_identity_is_opaque_and_its_token_proves_it():
    auth = guests()
    player, token = auth.new_guest("annabelle")
    other, _ = auth.new_guest("annabelle")
    assert player.startswith("g~") and len(player) == 18 and other != player
    assert auth.identify(token).player == player and auth.identify(token).via == "guest"


def test_a_guest_id_from_before_opaque_ids_stays_valid():
    auth = guests()
    legacy = auth._guest_token("ann~k3f9xq")  # as the gateway minted them before issue 42
    assert auth.identify(legacy).player == "ann~k3f9xq"


@pytest.mark.parametrize(
    "name", ["", "a" * 41, "ann bob", "bot:x", "ann~x", "é", "ann\n", "plylog-x", "PLYLOG-timekeeper", "Plylog-x"]
)
def test_guest_names_are_plain(name):
    with pytest.raises(ValueError):
        guests().new_guest(name)


def test_nobody_can_make_a_guest_token_for_a_chosen_player():
    auth = guests()
    _, token = auth.new_guest("mallory")
    _, body, mac = token.split(".")
    import base64

    victim = base64.urlsafe_b64encode(b"ann~abcdef").rstrip(b"=").decode()
    for forged in (f"g1.{victim}.{mac}", f"g1.{body}.{mac[:-1]}x", f"g1.{body}.é{mac}", "g1.%%%.x", "g1..", "g1"):
        with pytest.raises(InvalidCredential):
            auth.identify(forged)
    with pytest.raises(InvalidCredential):
        Authenticator(b"t" * 32, "guest", None).identify(token)  # another installation's secret


def test_the_operator_key_is_the_operator_and_a_near_miss_is_nobody():
    auth = guests()
    assert auth.identify(OPERATOR_KEY).operator
    for near in (OPERATOR_KEY[:-1], OPERATOR_KEY + "x", "é" * 10):
        with pytest.raises(InvalidCredential):
            auth.identify(near)


def test_a_seat_token_with_a_signature_that_is_not_ascii_is_refused_not_an_error():
    tokens = SeatTokens(SECRET)
    match_id, seat, mac = tokens.issue("m-1", 0).split(".")
    with pytest.raises(InvalidToken):
        tokens.verify(f"{match_id}.{seat}.{mac[:-2]}é€")


def platform(**claims) -> Authenticator:
    return Authenticator(
        SECRET,
        "jwt",
        OPERATOR_KEY,
        JwtSettings(HS_KEY.encode(), ("HS256",), audience="plylog", issuer="https://games.example"),
    )


def signed(key=HS_KEY, algorithm="HS256", **claims) -> str:
    body = {"sub": "u-123", "aud": "plylog", "iss": "https://games.example", "exp": int(time.time()) + 60, **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=algorithm)


def test_a_platform_token_names_its_player():
    assert platform().identify(signed()).player == "u-123" and platform().identify(signed()).via == "jwt"


@pytest.mark.parametrize(
    "token",
    [
        signed(exp=int(time.time()) - 10),
        signed(aud="elsewhere"),
        signed(iss="https://evil.example"),
        signed(key="another-secret-0123456789abcdef0000"),
        signed(sub="bot:mcts-2"),
        signed(sub="plylog-timekeeper"),
        signed(sub=None),
        signed(exp=None),
        signed(sub="x" * 65),
        "a.b.c",
    ],
)
def test_a_platform_token_that_is_expired_foreign_forged_or_names_plylog_is_refused(token):
    with pytest.raises(InvalidCredential):
        platform().identify(token)


def test_guest_identities_are_off_with_platform_tokens():
    with pytest.raises(InvalidCredential):
        platform().new_guest("ann")
    _, token = guests().new_guest("ann")
    with pytest.raises(InvalidCredential):
        platform().identify(token)


def test_a_platform_token_signed_with_a_private_key_is_checked_with_its_public_key(tmp_path):
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "platform.pem").write_bytes(pem)
    config = GatewayConfig.from_env(
        tmp_path,
        {
            "PLYLOG_AUTH": "jwt",
            "PLYLOG_JWT_PUBLIC_KEY": f"@{tmp_path}/platform.pem",
            "PLYLOG_JWT_AUDIENCE": "plylog",
            "PLYLOG_JWT_ISSUER": "https://games.example",
        },
    )
    auth = Authenticator(SECRET, config.auth_mode, config.operator_key, config.jwt)
    assert auth.identify(signed(key=private, algorithm="ES256")).player == "u-123"
    with pytest.raises(InvalidCredential):  # an HS256 token made with the public key as its secret
        auth.identify(jwt.encode({"sub": "u-1", "exp": int(time.time()) + 60}, "x" * 40, algorithm="HS256"))


@pytest.mark.parametrize(
    "env,words",
    [
        ({"PLYLOG_AUTH": "ldap"}, "PLYLOG_AUTH"),
        ({"PLYLOG_AUTH": "jwt"}, "exactly one of"),
        ({"PLYLOG_AUTH": "jwt", "PLYLOG_JWT_KEY": "short"}, "shorter than 32"),
        ({"PLYLOG_AUTH": "jwt", "PLYLOG_JWT_KEY": HS_KEY, "PLYLOG_JWT_ALGORITHMS": "RS256"}, "does not fit"),
        ({"PLYLOG_OPERATOR_KEY": "short"}, "PLYLOG_OPERATOR_KEY"),
    ],
)
def test_auth_settings_that_cannot_work_are_refused_with_what_to_do(tmp_path, env, words):
    with pytest.raises(SettingsError, match=words):
        GatewayConfig.from_env(tmp_path, env)


def test_the_operator_key_is_made_once_private_to_the_home(tmp_path: Path):
    first = GatewayConfig.from_env(tmp_path, {}).operator_key
    assert GatewayConfig.from_env(tmp_path, {}).operator_key == first
    assert (tmp_path / OPERATOR_KEY_FILE).stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("player", "refused"),
    [
        ("plylog-operator", True),
        ("PLYLOG-operator", True),
        ("ｐｌｙｌｏｇ-operator", True),  # fullwidth letters: NFKC makes them plylog-
        ("Bot:random", True),
        ("bot：random", True),  # a fullwidth colon
        ("u-42\n", True),
        ("u\u200d42", True),  # a zero-width joiner
        ("u\u202e24", True),  # a right-to-left override
        ("u\u2028", True),  # a line separator
        ("plylog_fan", False),
        ("Zoë", False),
        ("bots-r-us", False),
    ],
)
def test_plylogs_own_ids_however_written_and_unseen_characters_are_no_players(player, refused):
    assert bool(player_problem(player)) is refused
    token = jwt.encode({"sub": player, "exp": int(time.time()) + 60}, HS_KEY, algorithm="HS256")
    platform = Authenticator(SECRET, "jwt", None, JwtSettings(HS_KEY.encode(), ("HS256",)))
    guest_token = guests()._guest_token(player)  # as a gateway minted before names were checked
    for authenticator, credential in ((platform, token), (guests(), guest_token)):
        if refused:
            with pytest.raises(InvalidCredential):
                authenticator.identify(credential)
        else:
            assert authenticator.identify(credential).player == player
