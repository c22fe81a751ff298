"""A match's receipt: the last line of its exported results file (`plylog export --results`),
`{"receipt": {"v": 1, "signed": {...}, "alg": "Ed25519", "signature": ..., "keys": [...]}}`.

`signed` is `signed_payload(...)` (services/common/receipt_keys.py); `keys` are the keyring's
public keys, so that the file can be checked with nothing else (which proves integrity; origin
needs the key pinned, `plylog verify --keys`). docs/verifying.md describes the format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from games.receipts import GENESIS, canonical, extends_chain, next_link
from services.common.receipt_keys import ALG, Keyring, signed_payload


@dataclass(frozen=True)
class Summary:
    """What a match's results say about it, as a receipt signs it."""

    match_id: str
    rules: str | None
    outcome: dict[str, Any] | None
    chain: str  # the last link computed over the results (GENESIS when none is accepted)
    seq: int
    chained: bool  # its results carry links (a match created with `rules`); else legacy


def summarise(match_id: str, results: list[dict[str, Any]]) -> Summary:
    link, rules, outcome, seq, chained = GENESIS(match_id), None, None, 0, False
    for result in results:
        if not extends_chain(result):
            continue
        link, seq = next_link(link, result), result["seq"]
        chained = chained or "chain" in result
        for event in result.get("events", []):
            if event.get("type") == "match_created":
                rules = event.get("rules")
            elif event.get("type") == "match_ended":
                outcome = event
    return Summary(match_id, rules, outcome, link, seq, chained)


def seal(match_id: str, result_lines: list[bytes], keys: Keyring | Callable[[], Keyring]) -> bytes | None:
    """The receipt line for a match's results, or None for a legacy match (no chain links): its
    results carry no chain, so there is nothing a signature could bind the moves to. `keys` may
    be a function giving the keyring: called only for a chained match (no key is made for none)."""
    summary = summarise(match_id, [orjson.loads(line) for line in result_lines])
    if not summary.chained:
        return None
    keyring = keys if isinstance(keys, Keyring) else keys()
    payload = signed_payload(match_id, summary.rules, summary.outcome, summary.chain, summary.seq, keyring.kid)
    receipt = {
        "v": 1,
        "signed": payload,
        "alg": ALG,
        "signature": keyring.sign(canonical(payload)),
        "keys": keyring.public_keys(),
    }
    return orjson.dumps({"receipt": receipt})


def receipt_of(line: bytes) -> dict[str, Any] | None:
    """The receipt in a results file's line, or None when the line is not a receipt line."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict) and set(value) == {"receipt"}:
        return value["receipt"] if isinstance(value["receipt"], dict) else {}
    return None
