"""The wire contract as an AsyncAPI 3.0 document (`schemas/asyncapi.yaml`).

Built from the same models as the JSON Schema files: channels (the topics), who writes and
reads them (operations), one message per record kind and game with its payload schema
(`schemas.asyncapi_schemas`), and examples the caller supplies (`plylog schemas export`
takes them from real folds). `render` gives the YAML, byte-stable: keys in a fixed order,
no anchors, no line folding that depends on content.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from .asyncapi_schemas import REF_PREFIX, component_schemas
from .base import GAME_NAMES, MATCH_ID_PATTERN, MAX_RECORD_BYTES, REJECTION_MEANINGS
from .catalog import title
from .game_records import game_records

ASYNCAPI_VERSION = "3.0.0"
KAFKA_BINDING_VERSION = "0.5.0"
CONTRACT_VERSION = "1"

Example = dict[str, Any]  # an AsyncAPI Message Example Object: name, summary, payload


@dataclass(frozen=True)
class Installation:
    """What the document describes: the topic names of one prefix, the partition count, and
    the examples of each message (message key -> examples)."""

    prefix: str
    moves: str
    results: str
    outcomes: str
    deadletter: str
    changelog: str
    partitions: int
    examples: dict[str, list[Example]] = field(default_factory=dict)


def message_key(game: str, kind: str) -> str:
    """`mastermindMove`, `mindNinjaResult`, ...: the message's name in `components.messages`."""
    camel = title(game)
    return camel[0].lower() + camel[1:] + kind


# --- the document ---------------------------------------------------------------------------------
def asyncapi_document(site: Installation) -> dict[str, Any]:
    channels = _channels(site)
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": _info(site),
        "defaultContentType": "application/json",
        "servers": {
            "local": {
                "host": "127.0.0.1:9092",
                "protocol": "kafka",
                "description": "The local stack of `plylog up` (PLYLOG_KAFKA_PORT changes the port). "
                "Elsewhere, your cluster.",
            }
        },
        "channels": channels,
        "operations": _operations(channels),
        "components": {"schemas": component_schemas(), "messages": _messages(site)},
    }


def _info(site: Installation) -> dict[str, Any]:
    return {
        "title": "plylog wire contract",
        "version": CONTRACT_VERSION,
        "description": (
            "plylog is an event-sourced match service for turn-based games. Other systems integrate through "
            "these Kafka topics: they submit move records to the moves topic and read what the rules worker "
            "answers on the results, outcomes and dead-letter topics. This document is generated from the "
            "pydantic models in `schemas/` by `plylog schemas export` (the prose contract and guide: "
            "docs/contract.md).\n\n"
            "- Values are UTF-8 JSON objects; keys are the `match_id` as UTF-8 bytes (dead letters keep the key "
            "they came with).\n"
            f"- Topic names take a configurable prefix (PLYLOG_TOPIC_PREFIX, here `{site.prefix}`).\n"
            f"- {_partitioning(site)}\n"
            "- Per match, order is the partition's order: the rules worker folds each partition in offset order, "
            "and a match's results appear in the order of its move records.\n"
            "- Delivery is at least once: a consumer may see a record twice. Accepted results are identified by "
            "(match_id, seq), rejected ones by (match_id, event_id), outcomes by match_id.\n"
            "- Restricted topics (tag `restricted`): the moves topic, the dead-letter topic and the rules "
            "worker's changelog may hold Mastermind secrets; give only plylog's services and trusted producers "
            "access. The results and outcomes topics are public: they never carry a secret.\n"
            "- Additions to the contract are backward compatible (new optional fields, new event types): "
            "a consumer should ignore fields it does not know, although these schemas list every field sent today."
        ),
        "license": {"name": "MIT"},
        "tags": [_tag("restricted"), _tag("public"), _tag("internal")],
    }


TAGS = {
    "restricted": "may hold Mastermind secrets: only plylog's services and trusted producers may read or write it",
    "public": "never carries a secret; for any integrator",
    "internal": "plylog's own state, not part of the contract: do not produce to it or rely on its content",
}


def _tag(name: str) -> dict[str, str]:
    return {"name": name, "description": TAGS[name]}


def _partitioning(site: Installation) -> str:
    return (
        f"A match lives on one partition, its home partition `murmur2(key) % partitions` (the positive "
        f"murmur2 hash, `(murmur2(key) & 0x7fffffff) % partitions`, as the Java client's default partitioner "
        f"computes it). librdkafka clients (confluent-kafka, kcat, ...) must set `partitioner=murmur2_random`: "
        f"their default hashes differently. A move record on any other partition is rejected `malformed`, "
        f"with a message naming both partitions; its result goes to the partition it came on. "
        f"`{site.moves}` and `{site.results}` have the same partition count ({site.partitions} by default, "
        f"PLYLOG_PARTITIONS); `{site.outcomes}` has one."
    )


# --- channels ---------------------------------------------------------------------------------------
def _channel(
    address: str,
    title_: str,
    summary: str,
    description: str,
    access: str,
    messages: list[str],
    partitions: int,
    config: dict[str, Any],
    writers: list[str],
    readers: list[str],
    key: str,
) -> dict[str, Any]:
    return {
        "address": address,
        "title": title_,
        "summary": summary,
        "description": description,
        "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in messages},
        "tags": [_tag(access)],
        "bindings": {
            "kafka": {"partitions": partitions, "topicConfiguration": config, "bindingVersion": KAFKA_BINDING_VERSION}
        },
        "x-plylog-access": access,
        "x-plylog-key": key,
        "x-plylog-writers": writers,
        "x-plylog-readers": readers,
    }


def _forever() -> dict[str, Any]:
    return {"cleanup.policy": ["delete"], "retention.ms": -1, "retention.bytes": -1}


def _configurable() -> dict[str, Any]:
    return {
        "cleanup.policy": ["delete"],
        "retention.ms": -1,
        "retention.bytes": -1,
        "x-plylog-retention": "PLYLOG_RETENTION_MS (milliseconds; default -1 = forever)",
    }


def _channels(site: Installation) -> dict[str, Any]:
    match_key = "the match_id as UTF-8 bytes"

    def per_game(kind: str) -> list[str]:
        return [message_key(game, kind) for game in GAME_NAMES]

    return {
        "moves": _channel(
            site.moves,
            "Move records",
            "Every submitted action, one immutable record each: the source of truth.",
            "One record per submitted action (create, join, a game action, resign, ...). Nothing else is "
            "authoritative: the results, outcomes and every projection are rebuilt from this topic by refolding it, "
            "so it is kept forever and never compacted. Restricted: a Mastermind `set_code` carries the secret code "
            f"and salt. The key must equal the record's `match_id`. {_partitioning(site)} Records over "
            f"{MAX_RECORD_BYTES // 1024} KiB are rejected `too_large`. `event_id` is the idempotency key: a record "
            "whose event_id the match has accepted before is answered as a duplicate and changes nothing.",
            "restricted",
            per_game("Move"),
            site.partitions,
            _forever(),
            ["gateway (people and bots over HTTP)", "bots and any trusted producer"],
            ["rules worker", "plylog replay / export / audit", "the gateway's time travel"],
            match_key,
        ),
        "results": _channel(
            site.results,
            "Result records",
            "One result per readable move record: accepted (public events and the view) or rejected (a reason).",
            "Written by the rules worker on the partition of the move record it answers (so a match's results are "
            "on its home partition, in the order of its move records), keyed by the record's match_id. "
            "`source` is the move record's `{partition, offset}`. Public: events and views never hold a secret "
            "(a Mastermind code shows as its commitment until the try is over). Rejection codes are a closed set "
            "(x-plylog-rejection-codes). A duplicate (`duplicate: true`) has no events and changes nothing. "
            "Retention is configurable: the results can be rebuilt from the moves (`plylog replay`).",
            "public",
            per_game("Result"),
            site.partitions,
            _configurable(),
            ["rules worker"],
            ["projector", "gateway (server-sent events)", "integrators"],
            match_key,
        )
        | {"x-plylog-rejection-codes": dict(REJECTION_MEANINGS)},
        "outcomes": _channel(
            site.outcomes,
            "Outcome records",
            "One record per finished match, on a single partition.",
            "Written by the rules worker in the batch that ends a match (repeats possible after a crash, "
            "identified by match_id). One partition, so every consumer folds the outcomes in the same order: "
            "ratings are order-dependent. `rated` is false for aborted, hot-seat, unrated (created `rated: false`) "
            "and adjudicated matches.",
            "public",
            per_game("Outcome"),
            1,
            _configurable(),
            ["rules worker"],
            ["ratings projector", "integrators"],
            match_key,
        ),
        "deadletter": _channel(
            site.deadletter,
            "Dead letters",
            "Move records the rules worker could not attribute to a match.",
            "A record that is not a JSON object with a usable match_id and event_id, a tombstone (no value), or "
            "one the worker failed on internally. It never stops the worker. Kept with the key it came with, on "
            "the partition it came on. Restricted: `raw_b64` holds the raw record, which may carry a secret.",
            "restricted",
            ["deadLetter"],
            site.partitions,
            _configurable(),
            ["rules worker"],
            ["operators"],
            "the dead record's key, as received (may be absent)",
        ),
        "rulesChangelog": _channel(
            site.changelog,
            "Rules worker changelog (internal)",
            "The rules worker's table of match states (Faust changelog).",
            "Match states by match_id (running Mastermind secrets included) and each moves partition's "
            "position; compacted. Only the rules workers write and read it, to restore their table after a "
            "restart or a rebalance. Internal and restricted: restrict it like the moves topic; its content is "
            "not part of the contract.",
            "internal",
            ["matchState"],
            site.partitions,
            {"cleanup.policy": ["compact"]},
            ["rules worker"],
            ["rules worker (restoring its table)"],
            "the match_id, or a position key",
        )
        | {"tags": [_tag("internal"), _tag("restricted")], "x-plylog-access": "restricted"},
    }


# --- operations --------------------------------------------------------------------------------------
OPERATIONS = [  # (id, action, channel, title, description)
    (
        "submitMoves",
        "send",
        "moves",
        "Submit move records",
        "The gateway writes one move record per accepted HTTP action; bots and trusted producers may write "
        "directly, keyed by match_id and on the home partition.",
    ),
    (
        "foldMoves",
        "receive",
        "moves",
        "Fold move records",
        "The rules worker (one consumer group, any number of processes) folds every partition in offset order; "
        "`plylog replay` and `plylog export` read one match's home partition.",
    ),
    ("publishResults", "send", "results", "Publish results", "The rules worker answers every readable move record."),
    (
        "consumeResults",
        "receive",
        "results",
        "Consume results",
        "The projector keeps Redis views from them; the gateway streams them (SSE); integrators read them.",
    ),
    ("publishOutcomes", "send", "outcomes", "Publish outcomes", "The rules worker writes one when a match ends."),
    ("consumeOutcomes", "receive", "outcomes", "Consume outcomes", "The ratings projector and integrators."),
    ("publishDeadLetters", "send", "deadletter", "Publish dead letters", "The rules worker, for unusable records."),
    ("inspectDeadLetters", "receive", "deadletter", "Inspect dead letters", "Operators."),
    (
        "storeMatchStates",
        "send",
        "rulesChangelog",
        "Store match states (internal)",
        "The rules worker, after Kafka acknowledged the results that lead to them.",
    ),
    (
        "restoreMatchStates",
        "receive",
        "rulesChangelog",
        "Restore match states (internal)",
        "A rules worker taking over partitions.",
    ),
]


def _operations(channels: dict[str, Any]) -> dict[str, Any]:
    operations = {}
    for name, action, channel, title_, description in OPERATIONS:
        operations[name] = {
            "action": action,
            "channel": {"$ref": f"#/channels/{channel}"},
            "title": title_,
            "description": description,
            "messages": [
                {"$ref": f"#/channels/{channel}/messages/{message}"} for message in channels[channel]["messages"]
            ],
        }
    return operations


# --- messages ------------------------------------------------------------------------------------------
def _key_binding(schema: dict[str, Any]) -> dict[str, Any]:
    return {"kafka": {"key": schema, "bindingVersion": KAFKA_BINDING_VERSION}}


MATCH_KEY = {"type": "string", "pattern": MATCH_ID_PATTERN, "description": "the match_id, UTF-8"}


def _message(
    key: str,
    name: str,
    title_: str,
    summary: str,
    payload: str | None,
    site: Installation,
    key_schema: dict[str, Any],
    inline_payload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "name": name,
        "title": title_,
        "summary": summary,
        "contentType": "application/json",
        "payload": inline_payload if payload is None else {"$ref": REF_PREFIX + payload},
        "bindings": _key_binding(key_schema),
    }
    if site.examples.get(key):
        message["examples"] = site.examples[key]
    return message


def _messages(site: Installation) -> dict[str, Any]:
    messages = {}
    for game in GAME_NAMES:
        records = game_records(game)
        messages[message_key(game, "Move")] = _message(
            message_key(game, "Move"),
            records.move.__name__,
            f"{game} move record",
            f"An action in a {game} match: the lifecycle's (create, join, resign, abort, claim_timeout) or the game's.",
            records.move.__name__,
            site,
            MATCH_KEY,
        )
        messages[message_key(game, "Result")] = _message(
            message_key(game, "Result"),
            records.result.__name__,
            f"{game} result record",
            f"The answer to a move record of a {game} match: its public events and view.",
            records.result.__name__,
            site,
            MATCH_KEY,
        )
        messages[message_key(game, "Outcome")] = _message(
            message_key(game, "Outcome"),
            records.outcome.__name__,
            f"{game} outcome record",
            f"How a {game} match ended, with the game's reasons and scores.",
            records.outcome.__name__,
            site,
            MATCH_KEY,
        )
    messages["deadLetter"] = _message(
        "deadLetter",
        "DeadLetter",
        "dead letter",
        "An unusable move record, kept whole (base64) with its position.",
        "DeadLetter",
        site,
        {"type": "string", "description": "the dead record's key as received (any bytes)"},
    )
    messages["matchState"] = _message(
        "matchState",
        "MatchState",
        "match state (internal)",
        "A changelog entry of the rules worker's table: internal, may change without notice.",
        None,
        site,
        {"type": "string", "description": "a match_id, or `\\u0000position:<partition>`"},
        inline_payload={
            "description": '`{"offset": ..., "state": {...}}` for a match, or a position number; '
            "internal to the rules worker"
        },
    )
    return messages


# --- YAML --------------------------------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    """Block style, keys in insertion order, never an anchor for repeated values."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def render(document: dict[str, Any]) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)
