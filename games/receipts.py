"""The receipt chain of a match (docs/evolving.md, docs/contract.md): a SHA-256 hash chain over the
public part of its accepted results, so anyone holding the results can check none was changed,
removed or reordered. Pure, no I/O; only matches whose create stated `rules` carry it.

    chain_{-1} = sha256(b"plylog-receipt/1\\n" + match_id)
    chain_n    = sha256(bytes.fromhex(chain_{n-1}) + canonical(result without chain, source, duplicate))
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

#: Keys of a result outside the chain: the chain itself, where the record was read (a refold of
#: a file and of the topic must agree), and the duplicate flag (duplicates never extend it).
NOT_CHAINED = frozenset({"chain", "source", "duplicate"})


def GENESIS(match_id: str) -> str:
    """The link before a match's first result."""
    return hashlib.sha256(b"plylog-receipt/1\n" + match_id.encode()).hexdigest()


def canonical(value: Any) -> bytes:
    """The canonical JSON bytes the chain hashes: orjson, keys sorted."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def next_link(previous_hex: str, result: dict[str, Any]) -> str:
    """The link after `result` (its JSON form, as on the wire), given the link before it."""
    public = {key: value for key, value in result.items() if key not in NOT_CHAINED}
    return hashlib.sha256(bytes.fromhex(previous_hex) + canonical(public)).hexdigest()
