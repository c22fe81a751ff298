"""The rules worker's app module reads like a Faust app: short, and every tunable from Settings."""

from __future__ import annotations

import ast
from pathlib import Path

RULES = Path(__file__).resolve().parents[2] / "services" / "rules"


def test_the_app_module_is_at_most_120_lines():
    assert len((RULES / "app.py").read_text().splitlines()) <= 120


def test_only_the_entry_point_reads_the_environment():
    readers = []
    for path in sorted(RULES.rglob("*.py")):
        if path.name == "__main__.py":
            continue  # reads PLYLOG_INSTANCE and the loop choice in main(), never at import
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv"}:
                readers.append(f"{path.relative_to(RULES)}:{node.lineno}")
            if isinstance(node, ast.Constant) and node.value == "os" and isinstance(tree, ast.Module):
                readers.append(f"{path.relative_to(RULES)}:{node.lineno} (a dynamic import of os)")
    assert readers == [], "tunables go through services.common.settings.RulesSettings"


def test_the_rules_tunables_come_from_the_environment_through_settings():
    from services.common.settings import RulesSettings

    default = RulesSettings.from_env({})
    assert (default.batch_max, default.in_flight_records) == (500, 4000)
    given = RulesSettings.from_env({"PLYLOG_RULES_BATCH": "100"})
    assert (given.batch_max, given.buffer_capacity, given.in_flight_records) == (100, 200, 800)
