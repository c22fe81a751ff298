"""schemas/asyncapi.yaml: what the models give, a valid AsyncAPI 3.0 document by the
specification's own JSON Schema (@asyncapi/specs, installed by `make setup` into
deploy/asyncapi/node_modules), and self-contained: real records validate against its messages."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import get_args

import jsonschema
import orjson
import pytest
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7
from typer.testing import CliRunner

from games.playout import random_playout_records
from schemas.base import GAME_NAMES, RejectionCode
from services.cli.contract_doc import asyncapi_yaml
from services.cli.main import app
from tests.conftest import CI

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "schemas" / "asyncapi.yaml"
SPEC = REPO / "deploy" / "asyncapi" / "node_modules" / "@asyncapi" / "specs" / "schemas" / "3.0.0.json"
DOCUMENT_URI = "urn:plylog:asyncapi"


@lru_cache(maxsize=1)
def generated() -> str:
    return asyncapi_yaml()


@lru_cache(maxsize=1)
def document() -> dict:
    return yaml.safe_load(COMMITTED.read_text())


def test_committed_asyncapi_is_what_the_models_give():
    assert COMMITTED.read_text() == generated(), "stale schemas/asyncapi.yaml: run `plylog schemas export`"


def spec_validator() -> jsonschema.Draft7Validator:
    """The AsyncAPI 3.0.0 JSON Schema, its $refs resolved within the file (never over the network)."""
    if not SPEC.is_file():
        reason = f"{SPEC.relative_to(REPO)} is missing: run `make setup` (npm ci in deploy/asyncapi)"
        if CI:
            pytest.fail(f"{reason}; CI=true, so this is a failure", pytrace=False)
        pytest.skip(reason)
    spec = json.loads(SPEC.read_text())
    resources = [(spec["$id"], Resource.from_contents(spec, default_specification=DRAFT7))]
    resources += [
        (uri, Resource.from_contents(sub, default_specification=DRAFT7)) for uri, sub in spec["definitions"].items()
    ]
    return jsonschema.Draft7Validator(spec, registry=Registry().with_resources(resources))


def test_asyncapi_is_valid_by_the_specification():
    validator = spec_validator()
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(document())]
    assert not errors, errors[:5]
    broken = json.loads(json.dumps(document()))
    broken["channels"]["outcomes"]["bindings"]["kafka"]["partitions"] = 0
    broken["components"]["schemas"]["StrandsView"]["type"] = "board"
    assert len(list(validator.iter_errors(broken))) == 2, "the specification's schema must refuse a broken document"


def payload_validator(message: str) -> jsonschema.Draft7Validator:
    """The payload schema of a message, resolved inside the document alone."""
    doc = document()
    payload = doc["components"]["messages"][message]["payload"]
    registry = Registry().with_resource(DOCUMENT_URI, Resource.from_contents(doc, default_specification=DRAFT7))
    return jsonschema.Draft7Validator({"$ref": DOCUMENT_URI + payload["$ref"]}, registry=registry)


def _fits(message: str, record: dict) -> None:
    error = jsonschema.exceptions.best_match(payload_validator(message).iter_errors(record))
    assert error is None, f"{message}: {'/'.join(map(str, error.absolute_path))}: {error.message[:300]}"


def test_every_example_fits_its_message():
    examples = [
        (name, example)
        for name, message in document()["components"]["messages"].items()
        for example in message.get("examples", [])
    ]
    assert len(examples) >= 4 * 7 + 1  # per game: 2 moves, 4 results, 1 outcome; a dead letter
    for name, example in examples:
        _fits(name, example["payload"])


@pytest.mark.parametrize("game", GAME_NAMES)
def test_real_records_fit_the_documents_messages(game):
    """The document is self-contained: a playout's records validate with nothing but it."""
    camel = "".join(part.capitalize() for part in game.split("_"))
    prefix = camel[0].lower() + camel[1:]
    for raw, taken in random_playout_records(game, {}, 11, "doc-check"):
        _fits(f"{prefix}Move", orjson.loads(raw))
        _fits(f"{prefix}Result", taken.result)
        if taken.outcome is not None:
            _fits(f"{prefix}Outcome", taken.outcome)
    with pytest.raises(AssertionError):
        _fits(f"{prefix}Result", {**taken.result, "view": {**taken.result["view"], "game": "chess"}})


def test_the_document_describes_every_topic():
    channels = document()["channels"]
    addresses = {name: channel["address"] for name, channel in channels.items()}
    assert addresses == {
        "moves": "plylog.moves",
        "results": "plylog.results",
        "outcomes": "plylog.outcomes",
        "deadletter": "plylog.deadletter",
        "rulesChangelog": "plylog.rules-matches-changelog",
    }
    restricted = {name for name, channel in channels.items() if channel["x-plylog-access"] == "restricted"}
    assert restricted == {"moves", "deadletter", "rulesChangelog"}
    assert "internal" in {tag["name"] for tag in channels["rulesChangelog"]["tags"]}
    assert channels["outcomes"]["bindings"]["kafka"]["partitions"] == 1
    assert channels["moves"]["bindings"]["kafka"]["topicConfiguration"]["retention.ms"] == -1
    assert "murmur2_random" in channels["moves"]["description"]
    assert set(channels["results"]["x-plylog-rejection-codes"]) == set(get_args(RejectionCode))
    for channel in channels.values():
        assert channel["x-plylog-writers"] and channel["x-plylog-readers"]
    operations = document()["operations"]
    for name in channels:
        assert {op["action"] for op in operations.values() if op["channel"]["$ref"] == f"#/channels/{name}"} == {
            "send",
            "receive",
        }, f"{name}: who writes and who reads"


def test_schemas_export_is_idempotent(tmp_path):
    runner = CliRunner()
    args = ["schemas", "export", str(tmp_path / "json"), "--asyncapi", str(tmp_path / "asyncapi.yaml")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "0 schema files written" in second.output and "already up to date" in second.output
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == written
    assert (tmp_path / "asyncapi.yaml").read_text() == COMMITTED.read_text()
