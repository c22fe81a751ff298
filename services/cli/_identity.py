"""Which credential the CLI sends to create and join matches, in this order:

1. PLYLOG_PLAYER_TOKEN: a player credential (a guest token, or the platform's JWT);
2. the identity `plylog login NAME` saved in $PLYLOG_HOME/identity.json;
3. PLYLOG_OPERATOR_KEY, else the local gateway's key in $PLYLOG_HOME/operator.key: whoever can
   read it runs the installation, and creates matches for named players as its operator.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from services.common.settings import load

from ._errors import CliError

IDENTITY_FILE = "identity.json"
OPERATOR_KEY_FILE = "operator.key"  # as services.gateway.config writes it


@dataclass(frozen=True)
class Credential:
    token: str
    player: str | None  # None: the operator; "": a player the gateway names (GET /v1/whoami)
    source: str

    @property
    def operator(self) -> bool:
        return self.player is None


def identity_path() -> Path:
    return load().home / IDENTITY_FILE


def save_identity(player: str, token: str) -> Path:
    path = identity_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"player": player, "token": token}, out)
    return path


def credential() -> Credential:
    token = os.environ.get("PLYLOG_PLAYER_TOKEN", "").strip()
    if token:
        return Credential(token, "", "PLYLOG_PLAYER_TOKEN")
    saved = identity_path()
    if saved.exists():
        data = json.loads(saved.read_text())
        return Credential(data["token"], data["player"], str(saved))
    operator = _operator_key()
    if operator is not None:
        return operator
    raise CliError(
        "you have no identity on this gateway",
        "make one with `plylog login NAME`, or set PLYLOG_PLAYER_TOKEN (a guest token or your platform's JWT)",
    )


def operator_credential() -> Credential:
    """The operator key alone (PLYLOG_OPERATOR_KEY, else the local gateway's key file): for what only
    the operator may do, whatever identity `plylog login` saved."""
    operator = _operator_key()
    if operator is not None:
        return operator
    raise CliError(
        "this needs the operator key",
        f"set PLYLOG_OPERATOR_KEY, or run it where the gateway keeps {load().home / OPERATOR_KEY_FILE} "
        "(readable by you)",
    )


def _operator_key() -> Credential | None:
    """PLYLOG_OPERATOR_KEY, else the local gateway's key file when it is readable; None: neither."""
    key = os.environ.get("PLYLOG_OPERATOR_KEY", "").strip()
    if key:
        return Credential(key, None, "PLYLOG_OPERATOR_KEY")
    key_file = load().home / OPERATOR_KEY_FILE
    if key_file.exists() and os.access(key_file, os.R_OK):
        return Credential(key_file.read_text().strip(), None, str(key_file))
    return None
