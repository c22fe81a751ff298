"""Exports with receipts for tests (issue 42): the results of a log with their chain (as the fold
writes it for a create that states `rules`; recomputed, so a forged log can be chained too), and
the receipt export writes."""

from __future__ import annotations

from pathlib import Path

import orjson

from games.fold import encode, replay_lines
from games.receipts import chain_links
from services.cli._receipt import seal
from services.common.receipt_keys import Keyring


def with_chain(result_lines: list[bytes]) -> list[bytes]:
    """The results with `chain` on each accepted, non-duplicate one (recomputed when present)."""
    results = [orjson.loads(line) for line in result_lines]
    if not results:
        return []
    links = chain_links(results[0]["match_id"], results)
    return [encode(r if link is None else {**r, "chain": link}) for r, link in zip(results, links, strict=True)]


def topic_results(moves: list[bytes]) -> list[bytes]:
    """What the rules worker would have written for a log on partition 0 (offsets 0..n-1)."""
    steps = replay_lines(moves, "topic")
    return [encode({**s.result, "source": {"partition": 0, "offset": n}}) for n, s in enumerate(steps)]


def write_export(directory: Path, match_id: str, moves: list[bytes], results: list[bytes], keyring: Keyring) -> Path:
    """M.moves.jsonl and M.results.jsonl (chained, ending with the signed receipt); the moves file."""
    chained = with_chain(results)
    receipt = seal(match_id, chained, keyring)
    assert receipt is not None, "a chained log gets a receipt"
    moves_file = directory / f"{match_id}.moves.jsonl"
    moves_file.write_bytes(b"".join(line + b"\n" for line in moves))
    (directory / f"{match_id}.results.jsonl").write_bytes(b"".join(line + b"\n" for line in [*chained, receipt]))
    return moves_file


def changed_digit(line: bytes, after: bytes) -> bytes:
    """The line with the first digit after `after` replaced by another digit (one byte changed)."""
    at = line.index(after) + len(after)
    while not line[at : at + 1].isdigit():
        at += 1
    return line[:at] + (b"1" if line[at : at + 1] != b"1" else b"2") + line[at + 1 :]


def changed_first(line: bytes, after: bytes) -> bytes:
    """The line with the character right after `after` (a hex or base64url value's first) changed
    to another of both alphabets."""
    at = line.index(after) + len(after)
    return line[:at] + (b"0" if line[at : at + 1] != b"0" else b"1") + line[at + 1 :]
