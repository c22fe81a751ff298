"""The payload schemas of the AsyncAPI document: every record model, per game, in one
`components.schemas` namespace, as AsyncAPI Schema Objects (a superset of JSON Schema draft 07).

pydantic writes JSON Schema 2020-12; the few keywords that differ are rewritten so that a
draft-07 validator (and AsyncAPI tooling) reads them with the same meaning:
`prefixItems` -> `items` as a list (`items` beside it -> `additionalItems`), and the
OpenAPI-style `discriminator` object is dropped (AsyncAPI's `discriminator` is a property
name for inheritance; the `oneOf` branches are told apart by their `const` tags anyway).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

from .base import GAME_NAMES
from .catalog import title
from .game_records import game_records
from .records import DeadLetter

REF_PREFIX = "#/components/schemas/"
Mode = Literal["validation", "serialization"]
# pydantic names two models of the same name by their module path: schemas__strands__Place.
_QUALIFIED = re.compile(r"^schemas__(?P<module>\w+?)__(?P<name>\w+)$")


def payload_models() -> dict[str, tuple[type[BaseModel], Mode]]:
    """Component name -> (record model, mode): moves as the service accepts them (validation),
    what the service writes as it sends it (serialization)."""
    models: dict[str, tuple[type[BaseModel], Mode]] = {}
    for game in GAME_NAMES:
        records = game_records(game)
        models[records.move.__name__] = (records.move, "validation")
        models[records.result.__name__] = (records.result, "serialization")
        models[records.outcome.__name__] = (records.outcome, "serialization")
    models["DeadLetter"] = (DeadLetter, "serialization")
    return models


def component_schemas() -> dict[str, Any]:
    """`components.schemas`: the payload models and every model they use, refs rewritten."""
    inputs = [(name, mode, TypeAdapter(model)) for name, (model, mode) in payload_models().items()]
    tops, definitions = TypeAdapter.json_schemas(inputs, ref_template=REF_PREFIX + "{model}")
    schemas = dict(definitions.get("$defs", {}))
    for (name, _), top in tops.items():
        ref = top["$ref"][len(REF_PREFIX) :]
        if ref != name:  # the payload model's own schema sits under another name
            schemas[name] = schemas.pop(ref)
    renames = {old: _plain_name(old) for old in schemas}
    return {renames[name]: as_asyncapi_schema(schema, renames) for name, schema in sorted(schemas.items())}


def _plain_name(name: str) -> str:
    match = _QUALIFIED.match(name)
    return name if match is None else title(match["module"]) + match["name"]


def as_asyncapi_schema(schema: Any, renames: dict[str, str]) -> Any:
    """A JSON Schema 2020-12 node as an AsyncAPI (draft-07) Schema Object, recursively."""
    if isinstance(schema, list):
        return [as_asyncapi_schema(item, renames) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "discriminator" and isinstance(value, dict):
            continue
        if key == "$ref" and value.startswith(REF_PREFIX):
            converted[key] = REF_PREFIX + renames.get(value[len(REF_PREFIX) :], value[len(REF_PREFIX) :])
        elif key == "prefixItems":
            converted["items"] = as_asyncapi_schema(value, renames)
            if "items" in schema:
                converted["additionalItems"] = as_asyncapi_schema(schema["items"], renames)
        elif key == "items" and "prefixItems" in schema:
            continue
        elif key in ("properties", "$defs", "patternProperties"):
            converted[key] = {name: as_asyncapi_schema(sub, renames) for name, sub in value.items()}
        else:
            converted[key] = as_asyncapi_schema(value, renames)
    return converted
