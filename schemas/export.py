"""Write the contract as JSON Schema files, for integrators outside Python."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, TypeAdapter

from .catalog import GAME_SCHEMA_MODULES, game_models, game_schema
from .lifecycle import LIFECYCLE_ACTIONS, LIFECYCLE_EVENTS
from .records import DeadLetter, MoveRecord, OutcomeRecord, ResultRecord

RECORDS: dict[str, type[BaseModel]] = {
    "move-record": MoveRecord,
    "result-record": ResultRecord,
    "outcome-record": OutcomeRecord,
    "dead-letter": DeadLetter,
}


def _union_schema(models: tuple[type[BaseModel], ...], title: str) -> dict[str, Any]:
    union = Annotated[Union[models], Field(discriminator="type")]  # type: ignore[valid-type]
    schema = TypeAdapter(union).json_schema()
    schema["title"] = title
    return schema


def _options_model(game: str) -> type[BaseModel]:
    module = game_schema(game)
    return next(getattr(module, name) for name in dir(module)
                if name.endswith("Options") and isinstance(getattr(module, name), type)
                and getattr(module, name).__module__ == module.__name__)


def json_schemas() -> dict[str, dict[str, Any]]:
    """Relative file name -> JSON Schema, for every record, and per game its options,
    actions (lifecycle included) and events."""
    files = {f"{name}.json": model.model_json_schema() for name, model in RECORDS.items()}
    for game in GAME_SCHEMA_MODULES:
        files[f"{game}/options.json"] = _options_model(game).model_json_schema()
        files[f"{game}/actions.json"] = _union_schema((*LIFECYCLE_ACTIONS, *game_models(game, "ACTIONS")),
                                                      f"{game} action")
        files[f"{game}/events.json"] = _union_schema((*LIFECYCLE_EVENTS, *game_models(game, "EVENTS")),
                                                     f"{game} event")
    return files


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def export_json_schemas(directory: Path) -> list[Path]:
    written = []
    for name, schema in json_schemas().items():
        path = Path(directory) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(schema))
        written.append(path)
    return written
