"""`plylog verify FILE`: check an exported match offline (no stack, no network), and
`plylog keys list|rotate`: the receipt signing keys under PLYLOG_HOME."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import typer

from services.common.receipt_keys import load_keyring, rotate
from services.common.settings import load

from ._verify_checks import Export, Verdict, verify_export

OK, DOES_NOT_VERIFY, UNREADABLE = 0, 1, 2


def _pair(file: Path) -> tuple[Path, Path]:
    """(moves file, results file) of an export, given either."""
    name = file.name
    if name.endswith(".results.jsonl"):
        return file.with_name(name[: -len(".results.jsonl")] + ".moves.jsonl"), file
    stem = name[: -len(".moves.jsonl")] if name.endswith(".moves.jsonl") else file.stem
    return file, file.with_name(f"{stem}.results.jsonl")


def _fail(code: int, message: str) -> None:
    typer.echo(f"plylog verify: {message}", err=True)
    raise typer.Exit(code)


def _pinned_keys(path: Path) -> list[dict[str, Any]]:
    """Public keys of a keyring file or a saved GET /v1/keys answer (both are {"keys": [...]})."""
    try:
        keys = orjson.loads(_read_path(path))["keys"]
        if isinstance(keys, list) and all(isinstance(k, dict) for k in keys):
            return keys
    except (orjson.JSONDecodeError, KeyError, TypeError):
        pass
    _fail(UNREADABLE, f'{path} is neither a keyring nor a saved GET /v1/keys answer ({{"keys": [...]}})')
    raise AssertionError("unreachable")


def _read_path(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        _fail(UNREADABLE, f"cannot read {path}: {error.strerror or error}")
        raise AssertionError("unreachable") from None


def verify(
    file: Path = typer.Argument(..., help="The exported moves file (M.moves.jsonl) or its results file."),
    keys: Path | None = typer.Option(
        None,
        "--keys",
        help="Trust only these public keys: a keyring file, or a saved `GET /v1/keys` answer of the service.",
    ),
    require_receipt: bool = typer.Option(
        False,
        "--require-receipt",
        help="Fail (exit 1) when the export has no signed receipt (a legacy match, a combined export).",
    ),
) -> None:
    """Check an exported match offline: no stack, no network.

    Give the moves file of `plylog export --match M --results` (its results file, M.results.jsonl,
    must be beside it). Verify refolds every move with the rules worker's own fold (under the
    match's rules version) and compares each result; recomputes the receipt chain over the
    results; checks the receipt's Ed25519 signature of {match_id, rules, outcome, chain, seq,
    kid}. The first line that does not agree is named: FILE line N: move | result | chain |
    signature.

    The public key is taken from the export itself unless --keys pins trusted keys: a key in the
    file proves the file is intact, not who signed it. A match created before receipts (no
    `rules`, no chain) is refolded and its results checked; it has no receipt, which fails only
    with --require-receipt.

    Exit status: 0 verified, 1 does not verify, 2 a file cannot be read.
    """
    moves_file, results_file = _pair(file)
    pinned = _pinned_keys(keys) if keys is not None else None
    moves, results = _read_path(moves_file).splitlines(), _read_path(results_file).splitlines()
    export = Export(moves_file.name, results_file.name, moves, results)
    if not export.moves:
        _fail(UNREADABLE, f"{moves_file} holds no move records")
    verdict = verify_export(export, pinned)
    _report(verdict, moves_file, require_receipt)


def _report(verdict: Verdict, moves_file: Path, require_receipt: bool) -> None:
    for note in verdict.notes:
        typer.echo(f"note: {note}", err=True)
    if verdict.finding is not None:
        _fail(DOES_NOT_VERIFY, f"does not verify: {verdict.finding}")
    if verdict.receipt in ("none", "combined"):
        message = f"{moves_file.name}: {verdict.results} results refold; no receipt " + (
            "(created before receipts)" if verdict.receipt == "none" else "(many matches: export one with --match)"
        )
        if require_receipt:
            _fail(DOES_NOT_VERIFY, f"{message}, and --require-receipt wants one")
        typer.echo(message)
        return
    typer.echo(f"{moves_file.name}: verified: {verdict.results} results refold, the chain holds, the signature holds")


# --- keys ---------------------------------------------------------------------------------------------
keys_app = typer.Typer(
    help="The Ed25519 keys that sign exported matches' receipts: receipt-keys.json in PLYLOG_RECEIPT_KEYS_DIR"
    " (default PLYLOG_HOME), which every gateway and exporter of a deployment shares."
)


@keys_app.command("list")
def keys_list() -> None:
    """Print the public keys (current first, then retired) as GET /v1/keys serves them."""
    keyring = load_keyring(load().receipt_keys_dir)
    sys.stdout.write(orjson.dumps({"keys": keyring.public_keys()}, option=orjson.OPT_INDENT_2).decode() + "\n")


@keys_app.command("rotate")
def keys_rotate() -> None:
    """Make a new current key; the old public key stays, retired, so that old exports still verify."""
    keys_dir = load().receipt_keys_dir
    before = load_keyring(keys_dir).kid
    after = rotate(keys_dir)
    typer.echo(f"rotated: current key {after.kid}; {before} retired (its public key is kept)")


def register(app: typer.Typer) -> None:
    app.command("verify")(verify)
    app.add_typer(keys_app, name="keys")
