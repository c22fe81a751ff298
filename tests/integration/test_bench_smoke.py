"""The benchmark harness on the real broker and Redis, with tiny loads, so it cannot rot: every
scenario runs once and gives sane numbers, and the report, plots and README table are written."""
from __future__ import annotations

import dataclasses
import io
import json
import math

import pytest
from rich.console import Console

from bench import report, runner
from bench.figures import FIGURES
from bench.scenarios import QUICK
from bench.stack import BenchStack

pytestmark = pytest.mark.integration

TINY = dataclasses.replace(QUICK, moves=800, open_matches=60, latency_rate=200.0, latency_seconds=3.0,
                           latency_warmup_s=0.5, latency_bots=60, memory_matches=120, replay_matches=4)

#: figures that are not rates or sizes (a speed-up below 1 is a finding, not a fault)
NOT_POSITIVE = {"missed_ticks", "unanswered", "failed"}


@pytest.fixture(scope="module")
def quick_report(kafka_bootstrap, redis_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("bench")
    stack = BenchStack(kafka_bootstrap, redis_url, work, partitions=4)
    output = io.StringIO()
    result = runner.run(stack, TINY, [], Console(file=output, width=160), "quick")
    written = report.write(result, work / "results", "smoke")
    return result, written, output.getvalue()


def test_every_scenario_runs_and_gives_sane_numbers(quick_report):
    result, written, console = quick_report
    saved = json.loads(written[0].read_text())
    assert list(saved["scenarios"]) == list(runner.SCENARIOS)
    for name, summary in saved["scenarios"].items():
        assert summary["errors"] == [], (name, summary["errors"], console)
        assert summary["figures"], name
        for key, values in summary["figures"].items():
            median = values["median"]
            assert median is not None and math.isfinite(median), (name, key, values)
            if key not in NOT_POSITIVE:
                assert median > 0, (name, key, values)
    missing = [(f.scenario, f.key) for f in FIGURES if f.key not in saved["scenarios"][f.scenario]["figures"]]
    assert missing == []  # every figure of the summary table is measured


def test_the_figures_hang_together(quick_report):
    scenarios = quick_report[0]["scenarios"]
    figures = {name: {k: v["median"] for k, v in s["figures"].items()} for name, s in scenarios.items()}
    latency = figures["latency"]
    assert latency["unanswered"] == 0
    assert latency["p50_ms"] <= latency["p95_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert latency["results_p99_ms"] <= latency["results_max_ms"]
    assert 0 < latency["achieved_per_s"] <= TINY.latency_rate * 1.05
    assert figures["memory"]["active_matches"] >= TINY.memory_matches
    assert figures["memory"]["rules_rss_mib"] > 20  # a Python process with Faust, not a misread unit


def test_plots_and_the_readme_table_are_written(quick_report, tmp_path):
    result, written, _ = quick_report
    assert [p.suffix for p in written] == [".json", ".png", ".png"]
    assert all(p.stat().st_size > 5_000 for p in written[1:])
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{report.README_START}\nold table\n{report.README_END}\nafter\n")
    assert report.update_readme(readme, result, written[0].name)
    text = readme.read_text()
    assert "old table" not in text and text.startswith("# x\n\nbefore\n") and text.endswith("after\n")
    assert "| raw Kafka pass-through |" in text and "≥ 5,000" in text
