"""`plylog export` writes receipts (issue 42) on the real broker: a match whose results carry the
chain gets a signed receipt as the last line of its results file, made with the key in
PLYLOG_HOME, which `plylog verify` accepts; a legacy match's files are as before and no key is
made for it. The records are produced as the rules worker writes them (results chained as the
fold will chain them, tests/receipt_support.py), so no worker runs; no --check: today's fold
emits no chain to compare with."""

from __future__ import annotations

import random

import orjson
import pytest
from typer.testing import CliRunner

from games.playout import random_playout_records
from services.cli._receipt import receipt_of
from services.cli.main import app
from services.common.receipt_keys import KEYRING_FILE, load_keyring
from tests.receipt_support import topic_results, with_chain

from .harness import produce

pytestmark = pytest.mark.integration


def exported(kafka_bootstrap, tmp_path, match_id: str, chained: bool) -> tuple[list[bytes], list[bytes], object]:
    from services.common import kafka_admin
    from services.common.settings import Topics

    topics = Topics(f"receipts{random.randrange(16**6):06x}.")
    kafka_admin.ensure_contract_topics(kafka_bootstrap, topics.prefix, 1)
    try:
        moves = [raw for raw, _ in random_playout_records("strands", {"layout": "small-4"}, 5, match_id)]
        results = topic_results(moves)
        produce(kafka_bootstrap, topics.moves, [(match_id.encode(), raw) for raw in moves])
        produce(
            kafka_bootstrap,
            topics.results,
            [(match_id.encode(), r) for r in (with_chain(results) if chained else results)],
        )
        env = {
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "PLYLOG_TOPIC_PREFIX": topics.prefix,
            "PLYLOG_HOME": str(tmp_path / "home"),
        }
        out = tmp_path / f"{match_id}.moves.jsonl"
        answer = CliRunner().invoke(app, ["export", "--match", match_id, "--results", "--out", str(out)], env=env)
        assert answer.exit_code == 0, answer.output
    finally:
        kafka_admin.delete_topics(kafka_bootstrap, topics.all())
    return out.read_bytes().splitlines(), out.with_name(f"{match_id}.results.jsonl").read_bytes().splitlines(), out


def test_a_chained_match_is_exported_with_a_receipt_signed_by_the_home_key(kafka_bootstrap, tmp_path):
    moves, results, out = exported(kafka_bootstrap, tmp_path, "rc-chained", chained=True)
    assert len(results) == len(moves) + 1
    receipt = receipt_of(results[-1])
    assert receipt is not None
    keyring = load_keyring(tmp_path / "home")
    assert receipt["signed"]["kid"] == keyring.kid and receipt["keys"] == keyring.public_keys()
    assert receipt["signed"]["chain"] == orjson.loads(results[-2])["chain"]
    verified = CliRunner().invoke(app, ["verify", str(out), "--require-receipt"])
    assert verified.exit_code == 0, verified.output


def test_a_legacy_match_is_exported_as_before_and_makes_no_key(kafka_bootstrap, tmp_path):
    moves, results, _ = exported(kafka_bootstrap, tmp_path, "rc-legacy", chained=False)
    assert len(results) == len(moves) and all(receipt_of(line) is None for line in results)
    assert not (tmp_path / "home" / KEYRING_FILE).exists()
