"""Validate records against the committed JSON Schema files (`schemas/json/`) with `jsonschema`,
a validator independent of the pydantic models the files come from, counting what was checked.

    from tests.schema_check import check
    result = check("result", raw_bytes)          # parsed record back, or SchemaViolation
    check("view", result["view"], game="strands")

Kinds: `move`, `result`, `outcome`, `dead_letter`, `sse` (the data of a server-sent event: a
result record), `tournament`, `tournament_result`, `lobby_record`, `lobby_result` (matchmaking),
and per game `view`, `event`, `action`. WebSocket payloads get a kind when the gateway has them.
`tests/conftest.py` prints the counts in pytest's terminal summary, so a run says how many records
of each kind it validated.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas" / "json"
RECORD_FILES = {
    "move": "move-record.json",
    "result": "result-record.json",
    "outcome": "outcome-record.json",
    "dead_letter": "dead-letter.json",
    "sse": "result-record.json",
    "tournament": "tournament-record.json",
    "tournament_result": "tournament-result-record.json",
    "lobby_record": "matchmaking/lobby-record.json",
    "lobby_result": "matchmaking/lobby-result.json",
}
GAME_FILES = {"view": "view.json", "event": "events.json", "action": "actions.json"}

COUNTS: Counter = Counter()


class SchemaViolation(AssertionError):
    """A record that its committed schema refuses; the message says which kind, where and why."""


@cache
def validator(file: str) -> Draft202012Validator:
    schema = orjson.loads((SCHEMA_DIR / file).read_bytes())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_file(kind: str, game: str | None = None) -> str:
    if kind in RECORD_FILES:
        return RECORD_FILES[kind]
    if kind in GAME_FILES and game is not None:
        return f"{game}/{GAME_FILES[kind]}"
    raise ValueError(
        f"unknown record kind {kind!r} (game {game!r}); kinds: "
        f"{', '.join(RECORD_FILES)}, and with a game: {', '.join(GAME_FILES)}"
    )


def check(kind: str, record: bytes | str | dict[str, Any] | list | None, game: str | None = None) -> Any:
    """Validate `record` (JSON text or a parsed value) as a `kind`; return it parsed.
    Raises SchemaViolation with the path and the reason of the most relevant error."""
    file = schema_file(kind, game)
    value = orjson.loads(record) if isinstance(record, (bytes, str)) else record
    error = best_match(validator(file).iter_errors(value))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(the record)"
        raise SchemaViolation(f"{kind} does not fit schemas/json/{file} at {where}: {error.message[:500]}")
    COUNTS[kind if game is None else f"{kind}[{game}]"] += 1
    return value


def check_result(record: bytes | str | dict[str, Any], kind: str = "result") -> dict[str, Any]:
    """A result record, then its view and events against their game's own files."""
    result = check(kind, record)
    view = result.get("view")
    if view is not None:
        check("view", view, game=view["game"])
        for event in result["events"]:
            check("event", event, game=view["game"])
    return result


_CHECKED_POSITIONS: dict[str, set[tuple[int, int]]] = {}


def check_topic_records(kind: str, topic: str, records: Iterable[Any], limit: int = 1000) -> None:
    """Validate records read from a topic (objects with partition, offset, value), each position
    once however often the topic is read again, and at most `limit` per topic, taken across its
    partitions (offset by offset): jsonschema needs milliseconds per result, and crash tests read
    topics of ten thousand records many times over."""
    checked = _CHECKED_POSITIONS.setdefault(topic, set())
    for record in sorted(records, key=lambda r: (r.offset, r.partition)):
        if len(checked) >= limit:
            return
        if (record.partition, record.offset) not in checked and record.value is not None:
            check(kind, record.value)
            checked.add((record.partition, record.offset))


def summary_lines() -> list[str]:
    if not COUNTS:
        return []
    counted = ", ".join(f"{count} {kind}" for kind, count in sorted(COUNTS.items()))
    return [f"schema_check: validated against schemas/json/ (jsonschema): {counted}"]
