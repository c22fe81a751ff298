"""Receipts (issue 42): the chain formula, signing and `plylog verify`'s checks on exports of a
played match of every game: intact they verify; a changed byte in a move, a result, a chain link
or the signature is detected, naming its file and line; rotation keeps old exports valid."""

from __future__ import annotations

import hashlib
import os
import stat

import orjson
import pytest
from typer.testing import CliRunner

from games.playout import random_playout_records
from games.receipts import GENESIS, next_link
from services.cli._verify_checks import Export, verify_export
from services.cli.main import app
from services.common.receipt_keys import KEYRING_FILE, key_id, load_keyring, rotate, signature_valid
from services.common.settings import SettingsError
from tests.receipt_support import changed_digit, changed_first, topic_results, with_chain, write_export

OPTIONS = {
    "strands": {"layout": "small-4"},
    "mastermind": {"pegs": 3, "colors": 4},
    "mana": {"max_plies": 40},
    "mind_ninja": {"side": 3},
}


def played(game: str, seed: int = 3, legacy: bool = False) -> tuple[str, list[bytes]]:
    """A random match whose create states its rules, as the gateway writes it: the fold chains it
    (`legacy`: a create without `rules`, as before versions: no chain)."""
    match_id = f"r-{game.replace('_', '-')}"
    records = [orjson.loads(raw) for raw, _ in random_playout_records(game, OPTIONS[game], seed, match_id)]
    if not legacy:
        records[0]["action"]["rules"] = f"{game}/1"
    return match_id, [orjson.dumps(record) for record in records]


def lines(path) -> list[bytes]:
    return path.read_bytes().splitlines()


def export_of(moves_file) -> Export:
    results_file = moves_file.with_name(moves_file.name.replace(".moves.", ".results."))
    return Export(moves_file.name, results_file.name, lines(moves_file), lines(results_file))


def rewrite(path, number: int, change) -> None:
    content = lines(path)
    content[number - 1] = change(content[number - 1])
    path.write_bytes(b"".join(line + b"\n" for line in content))


@pytest.fixture
def keyring(tmp_path):
    return load_keyring(tmp_path / "home")


def test_the_chain_is_the_shared_formula_written_out():
    result = {"v": 1, "seq": 1, "status": "accepted", "duplicate": False, "source": {"partition": 0}, "events": []}
    genesis = hashlib.sha256(b"plylog-receipt/1\nm-1").hexdigest()
    body = orjson.dumps({"events": [], "seq": 1, "status": "accepted", "v": 1}, option=orjson.OPT_SORT_KEYS)
    assert GENESIS("m-1") == genesis
    assert next_link(genesis, result) == hashlib.sha256(bytes.fromhex(genesis) + body).hexdigest()
    assert next_link(genesis, {**result, "chain": "ff" * 32, "source": None}) == next_link(genesis, result)


def test_the_keyring_is_made_once_private_and_named_by_its_public_key(tmp_path):
    home = tmp_path / "home"
    first, again = load_keyring(home), load_keyring(home)
    assert first.kid == again.kid
    assert stat.S_IMODE(os.stat(home / KEYRING_FILE).st_mode) == 0o600
    (public,) = first.public_keys()
    raw = __import__("base64").urlsafe_b64decode(public["public_key"] + "=")
    assert public == {"kid": key_id(raw), "alg": "Ed25519", "public_key": public["public_key"], "status": "current"}
    assert public["kid"] == hashlib.sha256(raw).hexdigest()[:16]
    assert signature_valid(public["public_key"], {"a": 1}, first.sign(b'{"a":1}'))
    assert not signature_valid(public["public_key"], {"a": 2}, first.sign(b'{"a":1}'))


def test_the_keys_commands_use_the_shared_keyring_and_say_when_it_cannot_be_written(tmp_path, monkeypatch):
    shared, home = tmp_path / "shared", tmp_path / "home"
    monkeypatch.setenv("PLYLOG_HOME", str(home))
    monkeypatch.setenv("PLYLOG_RECEIPT_KEYS_DIR", str(shared))
    runner = CliRunner()
    listed = runner.invoke(app, ["keys", "list"])
    assert listed.exit_code == 0 and orjson.loads(listed.output)["keys"] == load_keyring(shared).public_keys()
    assert not (home / KEYRING_FILE).exists()
    rotated = runner.invoke(app, ["keys", "rotate"])
    assert rotated.exit_code == 0 and [k["status"] for k in load_keyring(shared).public_keys()] == [
        "current",
        "retired",
    ]
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("PLYLOG_RECEIPT_KEYS_DIR", str(tmp_path / "a-file" / "keys"))  # cannot be made
    refused = runner.invoke(app, ["keys", "list"])  # main() prints a SettingsError in one line, exit 2
    assert isinstance(refused.exception, SettingsError) and "cannot be made there" in str(refused.exception)


@pytest.mark.parametrize("game", list(OPTIONS))
def test_an_intact_export_of_each_game_verifies_with_its_signature(tmp_path, keyring, game):
    match_id, moves = played(game)
    verdict = verify_export(export_of(write_export(tmp_path, match_id, moves, topic_results(moves), keyring)))
    assert verdict.finding is None and verdict.receipt == "signed", verdict
    assert verdict.results == len(moves)


@pytest.mark.parametrize("game", list(OPTIONS))
def test_a_changed_byte_is_named_by_file_line_and_kind(tmp_path, keyring, game):
    match_id, moves = played(game)
    moves_file = write_export(tmp_path, match_id, moves, topic_results(moves), keyring)
    results_file = tmp_path / f"{match_id}.results.jsonl"
    pristine = {path: path.read_bytes() for path in (moves_file, results_file)}
    line = len(moves) // 2 + 1
    receipt_line = len(moves) + 1
    cases = [
        (moves_file, line, lambda b: changed_digit(b, b'"action"'), "move"),
        (results_file, line, lambda b: changed_digit(b, b'"view"'), "result"),
        (results_file, line, lambda b: changed_first(b, b'"chain":"'), "chain"),
        (results_file, receipt_line, lambda b: changed_first(b, b'"signature":"'), "signature"),
        (results_file, receipt_line, lambda b: changed_first(b, b'"chain":"'), "signature"),
    ]
    for path, number, change, what in cases:
        for restored, content in pristine.items():
            restored.write_bytes(content)
        rewrite(path, number, change)
        finding = verify_export(export_of(moves_file)).finding
        assert finding is not None, (path.name, number, what)
        assert (finding.file, finding.line, finding.what) == (path.name, number, what), finding


def test_a_consistent_rewrite_of_move_result_and_chain_fails_at_the_signature(tmp_path, keyring):
    match_id, moves = played("strands")
    moves_file = write_export(tmp_path, match_id, moves, topic_results(moves), keyring)
    results_file = tmp_path / f"{match_id}.results.jsonl"
    forged = [*moves[:-1], changed_digit(moves[-1], b'"at"')]  # the last move, replayed differently
    receipt = lines(results_file)[-1]
    moves_file.write_bytes(b"".join(line + b"\n" for line in forged))
    results_file.write_bytes(b"".join(line + b"\n" for line in [*with_chain(topic_results(forged)), receipt]))
    finding = verify_export(export_of(moves_file)).finding
    assert finding is not None and (finding.line, finding.what) == (len(moves) + 1, "signature"), finding


def test_an_export_signed_before_a_rotation_verifies_after_it_against_the_pinned_keyring(tmp_path, keyring):
    home = tmp_path / "home"
    match_id, moves = played("mind_ninja")
    moves_file = write_export(tmp_path, match_id, moves, topic_results(moves), keyring)
    rotated = rotate(home)
    assert rotated.kid != keyring.kid
    assert [(k["kid"], k["status"]) for k in rotated.public_keys()] == [
        (rotated.kid, "current"),
        (keyring.kid, "retired"),
    ]
    stored = orjson.loads((home / KEYRING_FILE).read_bytes())["keys"]
    assert ["private_key" in entry for entry in stored] == [True, False]  # a retired key keeps its public part only
    verdict = verify_export(export_of(moves_file), pinned=rotated.public_keys())
    assert verdict.finding is None and verdict.receipt == "signed", verdict
    stranger = load_keyring(tmp_path / "elsewhere").public_keys()
    finding = verify_export(export_of(moves_file), pinned=stranger).finding
    assert finding is not None and finding.what == "signature" and "pinned" in finding.message


def test_a_legacy_export_refolds_without_a_receipt_and_a_changed_move_is_still_found(tmp_path):
    _, moves = played("mana", legacy=True)
    results = topic_results(moves)
    verdict = verify_export(Export("m.moves.jsonl", "m.results.jsonl", moves, results))
    assert verdict.finding is None and verdict.receipt == "none"
    changed = [*moves[:3], changed_digit(moves[3], b'"action"'), *moves[4:]]
    finding = verify_export(Export("m.moves.jsonl", "m.results.jsonl", changed, results)).finding
    assert finding is not None and (finding.line, finding.what) == (4, "move or result"), finding


def test_a_chained_export_whose_receipt_was_cut_off_does_not_verify(tmp_path):
    _, moves = played("strands")
    finding = verify_export(Export("m.moves.jsonl", "m.results.jsonl", moves, with_chain(topic_results(moves)))).finding
    assert finding is not None and (finding.line, finding.what) == (len(moves) + 1, "signature"), finding


def test_verify_command_exit_codes(tmp_path, keyring):
    match_id, moves = played("mastermind")
    moves_file = write_export(tmp_path, match_id, moves, topic_results(moves), keyring)
    runner = CliRunner()
    assert runner.invoke(app, ["verify", str(moves_file)]).exit_code == 0
    pinned = tmp_path / "keys.json"
    pinned.write_bytes(orjson.dumps({"keys": keyring.public_keys()}))
    assert runner.invoke(app, ["verify", str(moves_file), "--keys", str(pinned)]).exit_code == 0
    rewrite(moves_file, 2, lambda b: changed_digit(b, b'"action"'))
    failed = runner.invoke(app, ["verify", str(moves_file)])
    assert failed.exit_code == 1 and f"{moves_file.name} line 2: move" in failed.output
    assert runner.invoke(app, ["verify", str(tmp_path / "absent.moves.jsonl")]).exit_code == 2
    _, old_moves = played("mastermind", legacy=True)
    legacy = tmp_path / "old.moves.jsonl"
    legacy.write_bytes(b"".join(line + b"\n" for line in old_moves))
    (tmp_path / "old.results.jsonl").write_bytes(b"".join(line + b"\n" for line in topic_results(old_moves)))
    assert runner.invoke(app, ["verify", str(legacy)]).exit_code == 0
    assert runner.invoke(app, ["verify", str(legacy), "--require-receipt"]).exit_code == 1


def test_interleaved_matches_each_keep_their_own_chain():
    (first, a), (second, b) = played("strands"), played("mind_ninja")
    moves = [line for pair in zip(a, b, strict=False) for line in pair] + a[len(b) :] + b[len(a) :]
    results = with_chain(topic_results(moves))  # chained over the whole file: wrong for either match
    per_match = {m: with_chain(topic_results(log)) for m, log in ((first, a), (second, b))}
    rightly = [per_match[orjson.loads(line)["match_id"]].pop(0) for line in moves]
    verdict = verify_export(Export("c.moves.jsonl", "c.results.jsonl", moves, rightly))
    assert verdict.finding is None and verdict.receipt == "combined", verdict
    finding = verify_export(Export("c.moves.jsonl", "c.results.jsonl", moves, results)).finding
    assert finding is not None and (finding.line, finding.what) == (2, "chain"), finding
