"""Base classes and shared field types of the wire contract."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, StringConstraints

MAX_RECORD_BYTES = 64 * 1024

RejectionCode = Literal[
    "malformed",
    "too_large",
    "unknown_match",
    "match_exists",
    "stale",
    "not_seated",
    "already_seated",
    "not_your_turn",
    "illegal",
    "match_over",
    "not_timed_out",
    "forbidden",
    "unknown_rules",
]
# What each rejection code means (docs/contract.md); the keys are exactly RejectionCode's values.
REJECTION_MEANINGS = {
    "malformed": "not a usable move record: not JSON, not an object, an unknown or ill-typed field, an unknown "
    "action type, a key that is not the match_id, or a record off its match's home partition",
    "too_large": f"the record is larger than {MAX_RECORD_BYTES // 1024} KiB",
    "unknown_match": "no match with this match_id exists (create it first)",
    "match_exists": "a create for a match_id that already exists",
    "stale": "expected_seq is given and differs from the match's seq",
    "not_seated": "the player holds no seat in this match",
    "already_seated": "a join by a player who already holds a seat",
    "not_your_turn": "the player is seated but not to move",
    "illegal": "the rules refuse the action (the message says which rule)",
    "match_over": "the match has ended; it takes no more actions",
    "not_timed_out": "claim_timeout while the seat to move still has time, or before the match has started",
    "forbidden": "the player may not write this action here: `adjudicate` by anyone but the tournament service "
    "(plylog-tournaments) in a match it created",
    "unknown_rules": "a create whose `rules` names another game, or a version of its game that does not exist",
}
GameName = Literal["mastermind", "strands", "mana", "mind_ninja"]
GAME_NAMES = get_args(GameName)

EVENT_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"
MATCH_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
EventId = Annotated[str, StringConstraints(pattern=EVENT_ID_PATTERN)]
MatchId = Annotated[str, StringConstraints(pattern=MATCH_ID_PATTERN)]
MATCH_ID_RULE = "1 to 64 ASCII letters, digits, '_' or '-'"
_MATCH_ID = re.compile(MATCH_ID_PATTERN)


def is_match_id(value: Any) -> bool:
    """The one match-id grammar, checked at every entry (HTTP, sockets, the CLI, Redis key names).
    A full match: Python's `$` would also let a trailing line break through (pydantic's does not)."""
    return isinstance(value, str) and _MATCH_ID.fullmatch(value) is not None


#: A rules version as the wire names it: the game, a slash, a positive version number ("strands/2").
RULES_PATTERN = r"^[a-z_]{1,32}/[1-9][0-9]{0,5}$"
RulesName = Annotated[str, StringConstraints(pattern=RULES_PATTERN)]
#: A link of a match's receipt chain (games/receipts.py): SHA-256, lowercase hex.
CHAIN_PATTERN = r"^[0-9a-f]{64}$"

PlayerId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
# RFC 3339 in UTC: 'Z' or a zero offset, optional fraction of a second.
TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|z|\+00:00|-00:00)$"
Timestamp = Annotated[str, StringConstraints(pattern=TIMESTAMP_PATTERN)]
# Integers on the wire are JSON integers: never a boolean (`true` is not 1) nor a string ("1").
Seat = Annotated[StrictInt, Field(ge=0, le=1)]
Axial = tuple[StrictInt, StrictInt]


def _not_a_boolean(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("must be the integer 1, not a boolean")
    return value


#: The contract version of a record: the JSON integer 1 (`true` compares equal to 1 in Python).
Version = Annotated[Literal[1], BeforeValidator(_not_a_boolean)]


class Strict(BaseModel):
    """A wire record or action: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Action(Strict):
    type: str


class Event(Strict):
    """A public domain event; `type` names it."""

    type: str
