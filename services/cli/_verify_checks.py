"""The checks of `plylog verify` (pure: lines in, a verdict out; no network, no stack).

An export is a moves file (line n: a move record) and a results file (line n: its result; for
a match created with `rules`, one more line: the receipt). Verifying refolds the moves with the
rules worker's own fold, compares each result, recomputes the receipt chain over the results,
and checks the receipt's signature; the first line that does not agree is named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from games.fold import replay_lines
from games.receipts import GENESIS, canonical, extends_chain, next_link
from services.common.receipt_keys import signature_valid

from ._receipt import receipt_of, summarise

#: Keys a refolded result is compared without: where it was read from (the topic's place or the
#: file's line), and the link (checked on its own, against the recomputed chain).
NOT_COMPARED = ("source", "chain")


@dataclass(frozen=True)
class Finding:
    """The first disagreement: which file and line, what (move, result, chain, signature), why."""

    file: str
    line: int
    what: str
    message: str

    def __str__(self) -> str:
        return f"{self.file} line {self.line}: {self.what}: {self.message}"


@dataclass
class Verdict:
    finding: Finding | None = None
    receipt: str = "none"  # "signed" (signature checked), "none" (legacy), "missing", "combined" (many matches)
    notes: list[str] = field(default_factory=list)
    results: int = 0


@dataclass(frozen=True)
class Export:
    moves_name: str
    results_name: str
    moves: list[bytes]
    results: list[bytes]


def _compared(result: dict[str, Any]) -> bytes:
    return canonical({k: v for k, v in result.items() if k not in NOT_COMPARED})


def split_receipt(lines: list[bytes]) -> tuple[list[bytes], dict[str, Any] | None]:
    if lines and (receipt := receipt_of(lines[-1])) is not None:
        return lines[:-1], receipt
    return lines, None


def verify_export(export: Export, pinned: list[dict[str, Any]] | None = None) -> Verdict:
    """Refold, compare, rechain, check the receipt: the verdict names the first disagreement."""
    verdict = Verdict()
    result_lines, receipt = split_receipt(export.results)
    results: list[dict[str, Any]] = []
    for number, line in enumerate(result_lines, start=1):
        try:
            parsed = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            parsed = None
            message = f"not JSON ({error})"
        else:
            message = "not a JSON object"
        if not isinstance(parsed, dict):
            verdict.finding = Finding(export.results_name, number, "result", message)
            return verdict
        results.append(parsed)
    verdict.finding = _check_lines(export, results)
    verdict.results = len(results)
    if verdict.finding is None:
        _check_receipt(export, results, receipt, pinned, verdict)
    return verdict


def _check_lines(export: Export, results: list[dict[str, Any]]) -> Finding | None:
    if len(export.moves) != len(results):
        at = min(len(export.moves), len(results)) + 1
        short = (export.results_name, "result") if len(results) < len(export.moves) else (export.moves_name, "move")
        return Finding(
            short[0], at, short[1], f"{len(export.moves)} moves but {len(results)} results: a line is missing"
        )
    chained = any("chain" in result for result in results)
    links: dict[str, str] = {}  # match -> its last link (a combined export holds many matches)
    for number, (taken, stored) in enumerate(
        zip(replay_lines(export.moves, export.moves_name), results, strict=True), start=1
    ):
        match = stored.get("match_id")
        expected = None
        if isinstance(match, str) and extends_chain(stored):
            expected = next_link(links.get(match) or GENESIS(match), stored)
        if _compared(taken.result) != _compared(stored):
            return _blame(export, number, chained, stored, expected)
        if chained and stored.get("chain") != expected:
            what = "a link where none belongs (rejected or duplicate)" if expected is None else "the wrong link"
            return Finding(
                export.results_name, number, "chain", f"carries {what}: sha256(previous link + result) is {expected}"
            )
        if expected is not None and isinstance(match, str):
            links[match] = expected
    return None


def _blame(export: Export, number: int, chained: bool, stored: dict[str, Any], expected: str | None) -> Finding:
    """The refold of move n differs from result n. The chain tells which one changed: a result that
    still matches its link is as recorded, so the move changed; otherwise the result did."""
    if chained and stored.get("chain") == expected:
        return Finding(
            export.moves_name, number, "move", "its refold differs from the recorded result (the move was changed)"
        )
    if chained:
        return Finding(
            export.results_name,
            number,
            "result",
            "differs from the refold of its move and from its chain link (the result was changed)",
        )
    return Finding(
        export.moves_name,
        number,
        "move or result",
        f"the refold of the move differs from line {number} of {export.results_name} (no chain to tell which changed)",
    )


def _check_receipt(
    export: Export,
    results: list[dict[str, Any]],
    receipt: dict[str, Any] | None,
    pinned: list[dict[str, Any]] | None,
    verdict: Verdict,
) -> None:
    matches = {result.get("match_id") for result in results if result.get("status") == "accepted"}
    if receipt is None and len(matches) > 1:
        verdict.receipt = "combined"  # a --combined export: receipts are per match, so none
        return
    match_id = results[0]["match_id"] if results else ""
    summary = summarise(match_id, results)
    line = len(results) + 1
    if receipt is None:
        if summary.chained:
            verdict.receipt = "missing"
            verdict.finding = Finding(
                export.results_name, line, "signature", "no receipt line, but the results carry a chain (cut off?)"
            )
        return
    verdict.receipt = "signed"
    verdict.finding = _receipt_problem(export.results_name, line, receipt, summary, pinned, verdict.notes)


def _receipt_problem(
    file: str, line: int, receipt: dict[str, Any], summary: Any, pinned: list[dict[str, Any]] | None, notes: list[str]
) -> Finding | None:
    signed = receipt.get("signed")
    if not isinstance(signed, dict) or not isinstance(receipt.get("signature"), str):
        return Finding(file, line, "signature", "the receipt has no `signed` object or no `signature`")
    wanted = {
        "match_id": summary.match_id,
        "rules": summary.rules,
        "outcome": summary.outcome,
        "chain": summary.chain,
        "seq": summary.seq,
    }
    for name, value in wanted.items():
        if signed.get(name) != value:
            message = f"the signed {name} {signed.get(name)!r} is not the results' {value!r}"
            return Finding(file, line, "signature", message)
    kid = signed.get("kid")
    key = next((k for k in receipt.get("keys") or [] if isinstance(k, dict) and k.get("kid") == kid), None)
    if key is None:
        return Finding(file, line, "signature", f"the receipt carries no public key with kid {kid!r}")
    if pinned is not None:
        trusted = next((k for k in pinned if k.get("kid") == kid), None)
        if trusted is None or trusted.get("public_key") != key.get("public_key"):
            return Finding(file, line, "signature", f"key {kid} is not in the pinned keyring (--keys)")
        notes.append(f"signed by key {kid}, which the pinned keyring holds ({trusted.get('status')})")
    else:
        notes.append(
            f"signed by key {kid} ({key.get('status')}), taken from the file itself: this proves the file is "
            "intact, not who made it; pin the service's keys with --keys to check origin"
        )
    if key.get("alg") != "Ed25519" or not signature_valid(str(key.get("public_key")), signed, receipt["signature"]):
        return Finding(file, line, "signature", f"the Ed25519 signature does not verify with key {kid}")
    return None
