"""The golden match logs (tests/golden, written once by tests/golden/generate.py) refold to the very
bytes they gave when they were written: an old log keeps its meaning under any later code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from games.fold import Placement, Replayer, encode

GOLDEN = Path(__file__).parent.parent / "golden"
FILES = sorted(GOLDEN.glob("*/*.jsonl"))
TOPIC = "plylog.moves"


def refold(lines: list[dict[str, Any]]) -> list[tuple[bytes, bytes | None]]:
    """Each line's (result bytes, outcome bytes or None), folded as the worker or a log file would."""
    replayer, out = Replayer(), []
    for number, line in enumerate(lines, start=1):
        raw = line["record"].encode()
        if "key" in line:
            source = {"partition": line["partition"], "offset": line["offset"]}
            placement = Placement(TOPIC, line["partition"], line["home"])
            taken = replayer.feed(raw, source, key=line["key"], placement=placement)
        else:
            taken = replayer.feed(raw, {"file": "golden", "line": number})
        out.append((encode(taken.result), None if taken.outcome is None else encode(taken.outcome)))
    return out


def test_every_game_has_golden_logs():
    games = {path.parent.name for path in FILES}
    assert games >= {"strands", "mastermind", "mana", "mind_ninja", "any"}


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_a_golden_log_refolds_byte_for_byte(path: Path):
    lines = [orjson.loads(text) for text in path.read_bytes().splitlines()]
    for number, (line, (result, outcome)) in enumerate(zip(lines, refold(lines), strict=True), start=1):
        assert result == line["result"].encode(), f"{path.name} line {number}: the result changed"
        expected = line.get("outcome")
        assert outcome == (None if expected is None else expected.encode()), f"{path.name} line {number}: outcome"
