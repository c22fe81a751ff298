"""The receipt signing keys (issue 42): an Ed25519 keyring under PLYLOG_HOME, and the signed payload.

$PLYLOG_HOME/receipt-keys.json (mode 0600) holds the current key (private and public) and the
public keys of retired ones; it is made once, on first use, like the gateway secret. Rotation
makes a new current key and keeps the old public key, marked retired: an export signed before
still verifies. A key id (`kid`) is the first 16 hex characters of sha256 of the raw public key.
Signing happens at export (docs/decisions/receipts.md), never in the fold.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from games.receipts import canonical

from .settings import SettingsError

KEYRING_FILE = "receipt-keys.json"
ALG = "Ed25519"
#: Keys a keyring holds at most (current + retired): GET /v1/keys and every export carry them all.
MAX_KEYS = 32


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def from_b64url(text: str) -> bytes:
    """Bytes of unpadded base64url; ValueError when it is not."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, TypeError) as error:
        raise ValueError(f"not base64url: {error}") from None


def key_id(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()[:16]


def _raw_public(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes_raw()


@dataclass(frozen=True)
class Keyring:
    """The current private key and every public key (current first, then retired, newest first)."""

    private: Ed25519PrivateKey
    entries: tuple[dict[str, Any], ...]  # {kid, alg, public_key, status, created_at}

    @property
    def kid(self) -> str:
        return key_id(_raw_public(self.private))

    def public_keys(self) -> list[dict[str, str]]:
        """What GET /v1/keys and an export's receipt publish: kid, alg, public_key, status."""
        return [{k: entry[k] for k in ("kid", "alg", "public_key", "status")} for entry in self.entries]

    def sign(self, payload: bytes) -> str:
        return b64url(self.private.sign(payload))


def _new_entry(private: Ed25519PrivateKey) -> dict[str, Any]:
    public = _raw_public(private)
    return {
        "kid": key_id(public),
        "alg": ALG,
        "public_key": b64url(public),
        "status": "current",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "private_key": b64url(private.private_bytes_raw()),
    }


def _write_new(path: Path, document: dict[str, Any]) -> None:
    """Write the keyring beside, then rename over: a reader sees the old or the new one, whole."""
    fresh = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    os.replace(fresh, path)


def _create_once(path: Path) -> None:
    """Made once: O_EXCL, so two processes starting together keep one key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as out:
        out.write(orjson.dumps({"v": 1, "keys": [_new_entry(Ed25519PrivateKey.generate())]}) + b"\n")


def _parse(path: Path) -> Keyring:
    try:
        document = orjson.loads(path.read_bytes())
        entries = tuple(document["keys"])
        current = next(e for e in entries if e["status"] == "current")
        private = Ed25519PrivateKey.from_private_bytes(from_b64url(current["private_key"]))
    except (OSError, orjson.JSONDecodeError, KeyError, StopIteration, TypeError, ValueError) as error:
        raise SettingsError(f"{path} is not a usable receipt keyring ({error!r}); restore it from a backup") from None
    if key_id(_raw_public(private)) != current["kid"]:
        raise SettingsError(f"{path}: the current key's kid does not match its key; restore it from a backup")
    return Keyring(private, entries)


def load_keyring(home: Path) -> Keyring:
    """The keyring in `home`/receipt-keys.json (Settings.receipt_keys_dir), made (one fresh key)
    when there is none."""
    path = home / KEYRING_FILE
    if not path.exists():
        try:
            _create_once(path)
        except OSError as error:
            raise SettingsError(
                f"no receipt keyring in {home}, and it cannot be made there: {error.strerror}"
            ) from None
    return _parse(path)


def rotate(home: Path) -> Keyring:
    """A new current key; the old one's public part stays, retired (its private part is dropped)."""
    old = load_keyring(home)
    if len(old.entries) >= MAX_KEYS:
        raise SettingsError(
            f"the keyring holds {len(old.entries)} keys, the most it may (every export carries them all)"
        )
    retired = [{k: v for k, v in entry.items() if k != "private_key"} | {"status": "retired"} for entry in old.entries]
    try:
        _write_new(home / KEYRING_FILE, {"v": 1, "keys": [_new_entry(Ed25519PrivateKey.generate()), *retired]})
    except OSError as error:  # a read-only mount (a Kubernetes Secret): rotate a copy, replace the Secret
        raise SettingsError(f"cannot write {home / KEYRING_FILE}: {error.strerror}") from None
    return _parse(home / KEYRING_FILE)


# --- the signed payload ---------------------------------------------------------------------------
def signed_payload(
    match_id: str, rules: str | None, outcome: dict[str, Any] | None, chain: str, seq: int, kid: str
) -> dict[str, Any]:
    """What a receipt signs (its canonical bytes): the match, its rules version, its outcome (the
    `match_ended` event, None while it runs), the last chain link, the seq it covers, the key."""
    return {"match_id": match_id, "rules": rules, "outcome": outcome, "chain": chain, "seq": seq, "kid": kid}


def signature_valid(public_key: str, payload: dict[str, Any], signature: str) -> bool:
    """Whether `signature` (base64url) is the Ed25519 signature of canonical(payload) by the raw
    public key `public_key` (base64url). False for any malformed part, never an exception."""
    try:
        key = Ed25519PublicKey.from_public_bytes(from_b64url(public_key))
        key.verify(from_b64url(signature), canonical(payload))
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True
