"""Where `plylog bench` writes a report: only a run of every scenario lands in bench/results/ (the
docs' table, the one report kept in git); a subset or a quick run goes to a git-ignored folder, so
a latency check is never committed as if it were the full report."""

from __future__ import annotations

import subprocess

from bench.runner import SCENARIOS, plan, warmups
from services.cli.bench_cmd import results_subdir
from services.common.settings import repo_root

EVERY = list(SCENARIOS)


def test_only_every_scenario_goes_to_the_kept_folder():
    assert results_subdir(False, plan([]), EVERY) == ""
    assert results_subdir(False, plan(["latency", "floor"]), EVERY) == "partial"
    assert results_subdir(False, plan(["pipeline"]), EVERY) == "partial"  # with baseline, still a subset
    assert results_subdir(True, plan([]), EVERY) == "quick"


def test_a_run_at_other_loads_never_replaces_the_kept_report():
    assert results_subdir(False, plan([]), EVERY, standard_loads=False) == "partial"
    assert results_subdir(True, plan([]), EVERY, standard_loads=False) == "quick"


def test_the_partial_and_quick_folders_are_ignored_by_git():
    root = repo_root()
    assert root is not None
    for folder in ("partial", "quick"):
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", f"bench/results/{folder}/20261207-000000.json"], cwd=root, check=False
        )
        assert ignored.returncode == 0, f"bench/results/{folder}/ is not git-ignored"


def test_a_latency_figure_gets_a_paced_warm_up_first():
    assert warmups(["latency", "floor"]) == ["baseline", "latency"]
    assert warmups(["floor"]) == ["baseline", "latency"]
    assert warmups(["pipeline", "baseline"]) == ["baseline"]
