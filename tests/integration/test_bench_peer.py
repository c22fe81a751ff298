"""`plylog bench peer --quick` for real (Node.js and npm, no Kafka): boardgame.io measured, its
figures and the report's summary written, and no node process of it left behind. Without node or
npm the test is skipped (a failure under CI=true); the first run needs the npm registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import peer
from services.common.settings import repo_root
from tests.conftest import CI

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _processes_in(directory: Path) -> list[str]:
    """Command lines of the processes whose working directory is under `directory`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(directory):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


def test_plylog_bench_peer_quick_measures_boardgameio_without_kafka(tmp_path):
    missing = peer.unavailable()
    if missing:
        (pytest.fail if CI else pytest.skip)(f"the peer cannot run: {missing}")
    home, out = tmp_path / "home", tmp_path / "out"
    env = {**os.environ, "PLYLOG_HOME": str(home)}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    env.pop("REDIS_URL", None)  # no stack anywhere: the peer alone must not want one
    done = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "bench", "peer", "--quick", "--out", str(out)],
        env=env,
        cwd=repo_root(),
        capture_output=True,
        text=True,
        timeout=540,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "skipped" not in said and "starting Kafka" not in said
    assert "boardgame.io: closed loop, 50 matches" in said  # the summary table
    saved = json.loads(next(out.glob("*.json")).read_text())
    assert list(saved["scenarios"]) == ["peer"] and saved["stack"] is None
    figures = {k: v["median"] for k, v in saved["scenarios"]["peer"]["figures"].items()}
    assert figures["moves_per_s"] > 0 and figures["p50_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert figures["latency_offered_per_s"] == 1_000 and 0 < figures["latency_rate_held"] <= 1.1
    assert saved["summary"]["peer_moves_per_s"] == figures["moves_per_s"]
    assert saved["summary"]["peer_latency_p99_ms"] == figures["latency_p99_ms"]
    assert saved["summary"]["pipeline_vs_peer"] is None and saved["summary"]["client_vs_peer"] is None
    assert list(saved["scenarios"]["peer"]["latency_quantiles_ms"]) == [
        "boardgame.io closed loop, 50 matches",
        "boardgame.io at 1,000 moves/s offered",
    ]
    assert (home / "bench" / "cache" / "boardgameio" / "node_modules" / peer.LOCK_STAMP).is_file()
    assert _processes_in(home) == []  # every server and load generator stopped
