"""The committed JSON Schema files are exactly what the models export."""

from __future__ import annotations

from pathlib import Path

from schemas.export import json_schemas, render

COMMITTED = Path(__file__).resolve().parents[2] / "schemas" / "json"


def test_committed_json_schemas_match_the_models():
    expected = {name: render(schema) for name, schema in json_schemas().items()}
    committed = {str(p.relative_to(COMMITTED)): p.read_text() for p in COMMITTED.rglob("*.json")}
    assert sorted(committed) == sorted(expected), "run `plylog schemas export schemas/json`"
    stale = [name for name in expected if committed[name] != expected[name]]
    assert not stale, f"stale schema files {stale}: run `plylog schemas export schemas/json`"


def test_move_record_schema_forbids_unknown_fields():
    move = json_schemas()["move-record.json"]
    assert move["additionalProperties"] is False
    assert {"event_id", "match_id", "player", "at", "action"} <= set(move["required"])
