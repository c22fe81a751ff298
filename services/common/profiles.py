"""Players' personal data, sealed (docs/personal-data.md): a profile {name, contacts} encrypted with AES-GCM
under a key of the player's own. Profiles live on `<prefix>profiles`, keys on `<prefix>player-keys`,
both compacted and keyed by player id. Erasure deletes the key (a tombstone) and replaces the
profile with a marker that holds no personal data: the sealed bytes left in old segments until
compaction cannot be opened, and the player shows as erased forever after.

Record values (JSON):
- key:     {"v": 1, "alg": "A256GCM", "key": <base64url, 32 bytes>}
- profile: {"v": 1, "nonce": <base64url, 12 bytes>, "sealed": <base64url>}  (AAD: the player id, so a
           sealed profile cannot be passed off as another player's) or {"v": 1, "erased": true}

A profile's fields are optional: `name` (a guest's display name) and `contacts` ({endpoint id: the
e-mail address or webhook URL of one of the player's notification endpoints}; Redis keeps the
endpoint without it, services/common/notify_store.py). A platform's player who registers an e-mail
address gets a profile with contacts and no name (shown by id, as before).

New guests get opaque ids (`opaque_guest_id`): nothing in an id says who a person is.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ERASED_NAME = "erased player"
#: Guest ids made since issue 42: `g~` and 16 characters of this alphabet (80 bits), no name in them.
GUEST_ID_PREFIX = "g~"
GUEST_ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
GUEST_ID_LENGTH = 16
KEY_BYTES = 32
NONCE_BYTES = 12


def opaque_guest_id() -> str:
    """A new guest's player id: random, and nothing in it names the person."""
    return GUEST_ID_PREFIX + "".join(secrets.choice(GUEST_ID_ALPHABET) for _ in range(GUEST_ID_LENGTH))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_key_record() -> tuple[bytes, bytes]:
    """(the raw key, its record value on the key topic)."""
    key = AESGCM.generate_key(bit_length=KEY_BYTES * 8)
    return key, orjson.dumps({"v": 1, "alg": "A256GCM", "key": _b64(key)})


def key_of(record: bytes | None) -> bytes | None:
    """The raw key in a key record (None: a tombstone, or not a key record)."""
    if not record:
        return None
    try:
        return _unb64(orjson.loads(record)["key"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def seal(key: bytes, player: str, profile: Mapping[str, Any]) -> bytes:
    """A profile record: `profile` encrypted under `key`, bound to `player`."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, orjson.dumps(dict(profile)), player.encode())
    return orjson.dumps({"v": 1, "nonce": _b64(nonce), "sealed": _b64(sealed)})


ERASED_RECORD = orjson.dumps({"v": 1, "erased": True})


def erased(record: bytes | None) -> bool:
    return record == ERASED_RECORD or (bool(record) and orjson.loads(record or b"{}").get("erased") is True)


def unseal(key: bytes | None, player: str, record: bytes | None) -> dict[str, Any] | None:
    """The profile in `record` (None: no key, erased, or not opened by this key)."""
    if key is None or not record or erased(record):
        return None
    try:
        fields = orjson.loads(record)
        opened = AESGCM(key).decrypt(_unb64(fields["nonce"]), _unb64(fields["sealed"]), player.encode())
        profile = orjson.loads(opened)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, InvalidTag):
        return None
    return profile if isinstance(profile, dict) else None


def display_names(
    players: Iterable[str], keys: Mapping[str, bytes | None], profiles: Mapping[str, bytes | None]
) -> dict[str, str | None]:
    """{player: the name to show}: the profile's name, ERASED_NAME after erasure (a profile whose key
    is gone), None for a player with no profile (a bot, a platform's player, a guest from before
    profiles: clients show the id)."""
    names: dict[str, str | None] = {}
    for player in players:
        record = profiles.get(player)
        if record is None:
            names[player] = None
            continue
        profile = unseal(keys.get(player), player, record)
        if profile is None:
            names[player] = ERASED_NAME
        else:  # a profile with contacts and no name (a platform's player): shown by id
            names[player] = str(profile["name"]) if "name" in profile else None
    return names


def contacts_of(profile: Mapping[str, Any] | None) -> dict[str, str]:
    """{endpoint id: address or URL} of an opened profile (none for a profile without contacts)."""
    found = (profile or {}).get("contacts")
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def with_contact(profile: Mapping[str, Any] | None, endpoint_id: str, target: str | None) -> dict[str, Any]:
    """`profile` with the endpoint's address set (`target` None: removed); the other fields kept."""
    contacts = contacts_of(profile)
    if target is None:
        contacts.pop(endpoint_id, None)
    else:
        contacts[endpoint_id] = target
    return {**(profile or {}), "contacts": contacts}
