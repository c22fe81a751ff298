"""Receipts end to end (issue 42): a match of each game played through the gateway, exported with
`plylog export`, verified by a `plylog verify` subprocess whose environment points at nothing (no
Kafka, no Redis, an empty PLYLOG_HOME), tampered copies failing with the line named; the keys the
gateway serves pin the signature, and a rotation keeps an earlier export valid. The gateway and the
exporter have homes of their own and share the keyring through PLYLOG_RECEIPT_KEYS_DIR, as the
deploy files give it to every gateway.

Legacy matches (created without `rules`, so without a chain) are verified in
tests/integration/test_export_receipts.py and tests/unit/test_receipts.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from services.common.receipt_keys import KEYRING_FILE
from tests.receipt_support import changed_digit, changed_first

from .test_gateway_e2e import GAMES, create, play_to_end

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
PLYLOG = str(Path(sys.executable).with_name("plylog"))


@pytest.fixture(scope="module")
def keys_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("receipt-keys")


@pytest.fixture(scope="module")
def gateway_env(keys_dir: Path) -> dict[str, str]:
    return {"PLYLOG_RECEIPT_KEYS_DIR": str(keys_dir)}


def plylog(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PLYLOG, *args], env=env, capture_output=True, text=True, timeout=120)


def offline_env(tmp_path: Path) -> dict[str, str]:
    """Nothing to reach: closed ports and an empty home (verify must not need them)."""
    empty = tmp_path / "empty-home"
    empty.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", ""),
        "PLYLOG_HOME": str(empty),
        "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9",
        "REDIS_URL": "redis://127.0.0.1:9/0",
    }


def tampered(source: Path, directory: Path, number: int, change) -> None:
    """A copy of the export in `directory` with one byte of line `number` of `source` changed."""
    directory.mkdir()
    for path in source.parent.glob(f"{source.name.split('.')[0]}.*.jsonl"):
        shutil.copy(path, directory / path.name)
    copy = directory / source.name
    content = copy.read_bytes().splitlines()
    content[number - 1] = change(content[number - 1])
    copy.write_bytes(b"".join(line + b"\n" for line in content))


def test_matches_of_every_game_exported_verify_offline_and_tampered_copies_fail_naming_the_line(
    stack, tmp_path, keys_dir
):
    online = {
        **os.environ,
        "PLYLOG_HOME": str(tmp_path / "exporter-home"),
        "PLYLOG_RECEIPT_KEYS_DIR": str(keys_dir),  # the keyring /v1/keys serves and export signs with
        "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap,
        "PLYLOG_TOPIC_PREFIX": stack.topics.prefix,
    }
    offline = offline_env(tmp_path)
    keys_file = tmp_path / "keys.json"
    for number, game in enumerate(GAMES):
        match = create(stack, game)  # the gateway states the rules in force: the fold chains its results
        play_to_end(stack, match, seed=40 + number)
        match_id = match["match_id"]
        sealed = tmp_path / "sealed" / f"{match_id}.moves.jsonl"
        sealed.parent.mkdir(exist_ok=True)
        exported = plylog("export", "--match", match_id, "--results", "--check", "--out", str(sealed), env=online)
        assert exported.returncode == 0, exported.stderr
        results = sealed.with_name(f"{match_id}.results.jsonl").read_bytes().splitlines()
        assert all(b'"chain":"' in line for line in results if b'"accepted"' in line)
        assert orjson.loads(results[-1])["receipt"]["signed"]["match_id"] == match_id

        served = stack.http.get("/v1/keys")
        assert served.status_code == 200 and "max-age" in served.headers["cache-control"]
        keys_file.write_bytes(served.content)
        verified = plylog("verify", str(sealed), "--keys", str(keys_file), "--require-receipt", env=offline)
        assert verified.returncode == 0, verified.stderr

        moves = len(sealed.read_bytes().splitlines())
        results_file = sealed.with_name(f"{match_id}.results.jsonl")
        for kind, source, line, change in [
            ("move", sealed, 2, lambda b: changed_digit(b, b'"action"')),
            ("result", results_file, moves, lambda b: changed_digit(b, b'"view"')),
            ("chain", results_file, moves - 1, lambda b: changed_first(b, b'"chain":"')),
            ("signature", results_file, moves + 1, lambda b: changed_first(b, b'"signature":"')),
        ]:
            copy = tmp_path / f"{game}-{kind}"
            tampered(source, copy, line, change)
            failed = plylog("verify", str(copy / sealed.name), "--keys", str(keys_file), env=offline)
            assert failed.returncode == 1, (kind, failed.stdout, failed.stderr)
            assert f"{source.name} line {line}: {kind}:" in failed.stderr, (kind, failed.stderr)

    # a rotation: the gateway serves the new key and the retired one; the earlier export still verifies
    rotated = plylog("keys", "rotate", env=online)
    assert rotated.returncode == 0, rotated.stderr
    keys = stack.http.get("/v1/keys").json()["keys"]
    assert [k["status"] for k in keys] == ["current", "retired"]
    (tmp_path / "keys-after.json").write_bytes(orjson.dumps({"keys": keys}))
    after = plylog("verify", str(sealed), "--keys", str(tmp_path / "keys-after.json"), env=offline)
    assert after.returncode == 0, after.stderr
    # and the keyring is the shared one only: neither home made one of its own
    assert not (stack.gateway.dir / KEYRING_FILE).exists() and not (tmp_path / "exporter-home" / KEYRING_FILE).exists()
