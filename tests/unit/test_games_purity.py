"""The folder rule for `games` (it imports `schemas` and itself, never a service, the bench or the
tests), and the tournament deciders' purity: no clock, no randomness, no I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GAMES = sorted((ROOT / "games").rglob("*.py"))
TOURNAMENTS = sorted((ROOT / "games" / "tournaments").glob("*.py"))
# What a tournament decider must not touch: time, chance, files, sockets, processes, the environment.
IMPURE = {"time", "random", "secrets", "uuid", "os", "socket", "subprocess", "threading", "asyncio", "io", "pathlib"}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", GAMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_games_imports_no_service_bench_or_test_code(path):
    layers = {name.split(".")[0] for name in imported_modules(path)}
    assert not layers & {"services", "bench", "tests"}


@pytest.mark.parametrize("path", TOURNAMENTS, ids=lambda p: p.name)
def test_tournament_deciders_read_no_clock_and_draw_no_random_number(path):
    modules = {name.split(".")[0] for name in imported_modules(path)}
    assert not modules & IMPURE
    source = path.read_text()
    for call in ("datetime.now", "datetime.utcnow", "date.today", "open("):
        assert call not in source
