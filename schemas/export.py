"""Write the contract as JSON Schema files (draft 2020-12), for integrators outside Python.

Records that plylog writes (results, outcomes, dead letters) and views are exported in
pydantic's serialization mode: what the service sends, every always-present key required.
The move record, which others write, is exported in validation mode: what the service accepts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

from .base import GAME_NAMES
from .catalog import GAME_SCHEMA_MODULES, game_models, game_schema, view_model
from .game_records import game_records
from .lifecycle import LIFECYCLE_ACTIONS, LIFECYCLE_EVENTS
from .matchmaking import LobbyRecord, LobbyResult
from .records import DeadLetter, MoveRecord, OutcomeRecord, ResultRecord, tagged_union
from .tournament import TournamentRecord, TournamentResultRecord

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
Mode = Literal["validation", "serialization"]

# file stem -> (model, mode): what others send is validated, what plylog sends is serialized.
RECORDS: dict[str, tuple[type[BaseModel], Mode]] = {
    "move-record": (MoveRecord, "validation"),
    "result-record": (ResultRecord, "serialization"),
    "dead-letter": (DeadLetter, "serialization"),
    "tournament-record": (TournamentRecord, "validation"),
    "tournament-result-record": (TournamentResultRecord, "serialization"),
    "matchmaking/lobby-record": (LobbyRecord, "validation"),
    "matchmaking/lobby-result": (LobbyResult, "serialization"),
}


def _outcome_record_schema() -> dict[str, Any]:
    """The outcome record, its `outcome` (reasons, scores) tied to its `game`: one of the games' own."""
    union = tagged_union(tuple(game_records(game).outcome for game in GAME_NAMES), "game")
    schema = TypeAdapter(union).json_schema(mode="serialization")
    return {"title": "OutcomeRecord", "description": OutcomeRecord.__doc__, **schema}


def _union_schema(models: tuple[type[BaseModel], ...], title: str) -> dict[str, Any]:
    schema = TypeAdapter(tagged_union(models, "type")).json_schema()
    schema["title"] = title
    return schema


def _options_model(game: str) -> type[BaseModel]:
    module = game_schema(game)
    model: type[BaseModel] = next(
        getattr(module, name)
        for name in dir(module)
        if name.endswith("Options")
        and isinstance(getattr(module, name), type)
        and getattr(module, name).__module__ == module.__name__
    )
    return model


def json_schemas() -> dict[str, dict[str, Any]]:
    """Relative file name -> JSON Schema, for every record, and per game its options,
    actions (lifecycle included), events and public view."""
    files = {f"{name}.json": model.model_json_schema(mode=mode) for name, (model, mode) in RECORDS.items()}
    files["outcome-record.json"] = _outcome_record_schema()
    for game in GAME_SCHEMA_MODULES:
        files[f"{game}/options.json"] = _options_model(game).model_json_schema()
        files[f"{game}/actions.json"] = _union_schema(
            (*LIFECYCLE_ACTIONS, *game_models(game, "ACTIONS")), f"{game} action"
        )
        files[f"{game}/events.json"] = _union_schema((*LIFECYCLE_EVENTS, *game_models(game, "EVENTS")), f"{game} event")
        files[f"{game}/view.json"] = view_model(game).model_json_schema(mode="serialization")
    return {name: {"$schema": JSON_SCHEMA_DIALECT, **schema} for name, schema in files.items()}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it holds exactly that already; True when written."""
    path = Path(path)
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def export_json_schemas(directory: Path) -> tuple[list[Path], list[Path]]:
    """Write every JSON Schema file under `directory`: (files written, files already up to date)."""
    written: list[Path] = []
    unchanged: list[Path] = []
    for name, schema in json_schemas().items():
        path = Path(directory) / name
        (written if write_if_changed(path, render(schema)) else unchanged).append(path)
    return written, unchanged
