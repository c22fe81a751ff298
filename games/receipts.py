"""The receipt chain of a match (issue 42): a SHA-256 hash chain over its accepted results.

For a match whose create stated `rules`, every accepted, non-duplicate result carries
`chain`, the link computed here; rejected and duplicate results carry none and do not extend it.
Pure, no I/O: the fold, `plylog export` and `plylog verify` (and anyone outside, see
docs/verifying.md) compute the same links from the same result bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

#: Keys of a result that are not hashed: the link itself, where the record was read from (a
#: topic's {partition, offset}, a file's {file, line}), and the retry flag of a duplicate.
UNCHAINED_KEYS = frozenset({"chain", "source", "duplicate"})


def canonical(value: Any) -> bytes:
    """The canonical bytes of a JSON value: orjson with sorted keys (no whitespace)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def GENESIS(match_id: str) -> str:
    """chain_{-1}: the link before a match's first result."""
    return hashlib.sha256(b"plylog-receipt/1\n" + match_id.encode()).hexdigest()


def next_link(previous_hex: str, result_dict: dict[str, Any]) -> str:
    """chain_n = sha256(bytes.fromhex(chain_{n-1}) + canonical(result without UNCHAINED_KEYS))."""
    public = {key: value for key, value in result_dict.items() if key not in UNCHAINED_KEYS}
    return hashlib.sha256(bytes.fromhex(previous_hex) + canonical(public)).hexdigest()


def extends_chain(result: dict[str, Any]) -> bool:
    """Whether a result gets a link: accepted and not a duplicate."""
    return result.get("status") == "accepted" and not result.get("duplicate")


def chain_links(match_id: str, results: Iterable[dict[str, Any]]) -> list[str | None]:
    """The link each result of a match's log should carry, in order (None: carries none)."""
    link, links = GENESIS(match_id), list[str | None]()
    for result in results:
        if extends_chain(result):
            link = next_link(link, result)
            links.append(link)
        else:
            links.append(None)
    return links
