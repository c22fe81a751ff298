"""The boardgame.io peer of `plylog bench` without running it: load.js's JSON line as figures, the
harness's cached copy and install (a fake npm), the ratios to it and the report's summary, and the
one line that says why it is skipped when node is missing."""

from __future__ import annotations

import io
import json
import os
import stat

import pytest
from rich.console import Console
from typer.testing import CliRunner

from bench import peer, runner
from bench.figures import FIGURES, SUMMARY, derive, summary_of
from bench.scenarios import QUICK
from bench.stack import BenchStack

#: a line load.js printed (a quick run on the 2-core machine)
LOAD_LINE = json.dumps(
    {
        "label": "x",
        "matches": 50,
        "offeredRate": 1000,
        "complete": True,
        "matchesDone": 50,
        "setupS": 1.976,
        "elapsedS": 6.575,
        "moves": 2453,
        "movesPerS": 373.072,
        "matchesPerS": 7.604,
        "movesPerMatch": 49.06,
        "steadyMovesPerS": 384,
        "latencyMs": {"n": 2453, "p50": 109.951, "p95": 230.141, "p99": 285.242, "max": 324.39, "mean": 118.267},
        "server": {"cpuPct": 18.707, "rssMbStart": 116.32, "rssMbPeak": 134.906, "rssMbEnd": 134.906, "hwmMb": 134.906},
        "loader": {"cpuPct": 22.797, "eventLoopDelayP99Ms": 164.495, "rssMb": 119.887},
        "wins": {"0": 21, "1": 29, "draw": 0},
        "boardsFull": 50,
    }
)

SUMMARY_KEYS = {
    "peer_moves_per_s",
    "pipeline_moves_per_s",
    "pipeline_vs_peer",
    "peer_latency_p99_ms",
    "latency_p99_ms",
    "latency_rate_held",
    "latency_vs_faust_floor",
    "client_moves_per_s",
    "client_vs_peer",
    "single_client_p50_ms",
    "rules_cpu_vs_passthrough",
    "projector_cpu_vs_passthrough",
    "recovery_s",
    "floor_latency_p99_ms",
    "floor_latency_vs_peer",
    "floor_faust_latency_vs_peer",
    "client_cpu_bound_vs_peer",
}


# --- load.js's report ---------------------------------------------------------------------------
def test_the_json_line_is_found_after_other_output_and_becomes_figures():
    report = peer.parse_report(f"(node:1) ExperimentalWarning: something\n{LOAD_LINE}\n\n")
    figures = peer.figures_of(report, "latency_")
    assert figures["latency_moves_per_s"] == 373.072
    assert (figures["latency_p50_ms"], figures["latency_p99_ms"], figures["latency_max_ms"]) == (
        109.951,
        285.242,
        324.39,
    )
    assert figures["latency_server_cpu_us_per_move"] == pytest.approx(0.18707 * 6.575 / 2453 * 1e6)  # ~501 µs
    # with load.js's own clients over the same play (loader.cpuPct): the peer's whole cost per move
    assert figures["latency_all_in_cpu_us_per_move"] == pytest.approx((0.18707 + 0.22797) * 6.575 / 2453 * 1e6)
    assert figures["latency_server_rss_peak_mib"] == 134.906
    assert figures["latency_offered_per_s"] == 1000
    assert figures["latency_achieved_per_s"] == 384  # the steady rate, not the ramped whole-run one
    assert figures["latency_rate_held"] == pytest.approx(0.384)
    assert all(key.startswith("latency_") for key in figures)


def test_a_closed_loop_run_has_no_offered_rate_and_a_short_one_no_steady_rate():
    report = {**json.loads(LOAD_LINE), "offeredRate": 0, "steadyMovesPerS": None}
    figures = peer.figures_of(report)
    assert "offered_per_s" not in figures and "rate_held" not in figures and "steady_moves_per_s" not in figures
    assert figures["moves_per_s"] == 373.072
    short = peer.figures_of({**json.loads(LOAD_LINE), "steadyMovesPerS": None})
    assert short["achieved_per_s"] == 373.072 and short["rate_held"] == pytest.approx(0.373072)


@pytest.mark.parametrize(
    "output, message",
    [
        ("Error: connect ECONNREFUSED 127.0.0.1:8000\n", "no JSON line"),
        ("", "no JSON line"),
        ('{"movesPerS": 3\n', "broken JSON line"),
    ],
)
def test_output_without_a_report_is_a_failure_that_says_so(output, message):
    with pytest.raises(peer.PeerFailed, match=message):
        peer.parse_report(output)


def test_a_run_whose_matches_did_not_finish_gives_no_figures():
    with pytest.raises(peer.PeerFailed, match=r"did not finish its matches .48 of 50"):
        peer.figures_of({**json.loads(LOAD_LINE), "complete": False, "matchesDone": 48})


# --- the harness's copy and install -------------------------------------------------------------
@pytest.fixture
def harness(tmp_path, monkeypatch):
    """A read-only source and a fake npm that counts its calls."""
    source = tmp_path / "source"
    source.mkdir()
    for name, text in (("package-lock.json", "{}"), ("server.js", "// s"), ("load.js", "// l"), ("bench.sh", "#!")):
        (source / name).write_text(text)
        (source / name).chmod(0o555 if name.endswith(".sh") else 0o444)
    (source / "node_modules").mkdir()  # somebody's install in the source is not copied
    (source / "node_modules" / "junk").write_text("x")
    tools = tmp_path / "bin"
    tools.mkdir()
    npm = tools / "npm"
    npm.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "npm-calls"}\nrm -rf node_modules && mkdir node_modules\n')
    npm.chmod(0o755)
    source.chmod(0o555)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(peer.SOURCE_ENV, str(source))
    yield source, tmp_path / "cache", tmp_path / "npm-calls"
    source.chmod(0o755)


def test_the_harness_is_copied_and_installed_once_and_again_when_its_sources_change(harness):
    source, cache, calls = harness
    work = peer.prepare(cache)
    assert work == cache / "boardgameio"
    assert sorted(p.name for p in work.iterdir()) == sorted(
        [".plylog-source", "bench.sh", "load.js", "node_modules", "package-lock.json", "server.js"]
    )
    assert not (work / "node_modules" / "junk").exists()
    assert os.access(work / "load.js", os.W_OK) and os.access(work / "bench.sh", os.X_OK)
    assert stat.S_IMODE(work.stat().st_mode) & 0o200  # npm ci can write node_modules there
    assert calls.read_text().split("\n")[0].startswith("ci ")
    said: list[str] = []
    peer.prepare(cache, said.append)
    assert said == [] and len(calls.read_text().splitlines()) == 1  # nothing changed: nothing done

    source.chmod(0o755)
    (source / "server.js").chmod(0o644)
    (source / "server.js").write_text("// changed")
    (work / "stray.js").write_text("left by an older copy")
    peer.prepare(cache, said.append)
    assert (work / "server.js").read_text() == "// changed" and not (work / "stray.js").exists()
    assert len(said) == 1 and "copying" in said[0] and len(calls.read_text().splitlines()) == 1  # same lock

    (source / "package-lock.json").chmod(0o644)
    (source / "package-lock.json").write_text('{"lockfileVersion": 3}')
    peer.prepare(cache, said.append)
    assert len(calls.read_text().splitlines()) == 2 and "npm ci" in said[-1]


def test_a_failed_npm_ci_is_retried_next_time(harness, tmp_path):
    _, cache, calls = harness
    npm = tmp_path / "bin" / "npm"
    good = npm.read_text()
    npm.write_text("#!/bin/sh\necho 'npm ERR! network' >&2\nexit 1\n")
    with pytest.raises(peer.PeerFailed, match=r"npm ci .* failed .exit 1.: npm ERR! network"):
        peer.prepare(cache)
    npm.write_text(good)
    peer.prepare(cache)
    assert len(calls.read_text().splitlines()) == 1


# --- ratios and the summary ---------------------------------------------------------------------
def spread(median, low=None, high=None):
    return {
        "median": median,
        "min": median if low is None else low,
        "max": median if high is None else high,
        "runs": [median],
    }


def scenarios_measured() -> dict:
    return {
        "baseline": {"figures": {"records_per_s": spread(60_000.0), "cpu_us_per_record": spread(10.0, 8.0, 12.0)}},
        "pipeline": {
            "figures": {
                "moves_per_s": spread(2_700.0, 2_000.0, 3_000.0),
                "rules_moves_per_s": spread(2_650.0),
                "rules_cpu_us_per_move": spread(370.0),
                "projector_cpu_us_per_result": spread(160.0),
            }
        },
        "latency": {"figures": {"p50_ms": spread(35.0), "p99_ms": spread(110.0), "rate_held": spread(0.998)}},
        "http": {"figures": {"moves_per_s": spread(450.0)}},
        "peer": {
            "figures": {
                "moves_per_s": spread(1_800.0, 1_500.0, 2_000.0),
                "latency_p50_ms": spread(2.0),
                "latency_p99_ms": spread(44.0),
            }
        },
    }


def test_every_peer_counterpart_is_a_ratio_in_the_same_invocation_and_the_summary_reads_it():
    measured = scenarios_measured()
    derive(measured)
    pipeline = measured["pipeline"]["figures"]
    assert pipeline["vs_peer"] == {"median": 1.5, "min": 1.0, "max": 2.0, "runs": None}  # 2,700/1,800; 2,000/2,000 ..
    assert measured["latency"]["figures"]["p99_vs_peer"]["median"] == pytest.approx(2.5)
    assert measured["latency"]["figures"]["p50_vs_peer"]["median"] == pytest.approx(17.5)
    assert measured["http"]["figures"]["vs_peer"]["median"] == pytest.approx(0.25)
    assert pipeline["rules_cpu_vs_passthrough"] == {"median": 37.0, "min": 370 / 12, "max": 370 / 8, "runs": None}
    assert pipeline["ratio_to_baseline"]["median"] == pytest.approx(0.045)

    summary = summary_of(measured)
    assert set(summary) == SUMMARY_KEYS
    assert summary == {
        "peer_moves_per_s": 1_800.0,
        "pipeline_moves_per_s": 2_700.0,
        "pipeline_vs_peer": 1.5,
        "peer_latency_p99_ms": 44.0,
        "latency_p99_ms": 110.0,
        "latency_rate_held": 0.998,
        "latency_vs_faust_floor": None,
        "client_moves_per_s": 450.0,
        "client_vs_peer": 0.25,
        "single_client_p50_ms": None,
        "rules_cpu_vs_passthrough": 37.0,
        "projector_cpu_vs_passthrough": 16.0,
        "recovery_s": None,
        "floor_latency_p99_ms": None,
        "floor_latency_vs_peer": None,
        "floor_faust_latency_vs_peer": None,
        "client_cpu_bound_vs_peer": None,
    }
    json.dumps(summary, allow_nan=False)  # numbers or null


def test_the_summary_takes_the_ratios_as_derived_and_never_computes_them_again():
    measured = scenarios_measured()
    measured["pipeline"]["figures"]["vs_peer"] = spread(9.25)  # not 2,700 / 1,800: the summary must not care
    assert summary_of(measured)["pipeline_vs_peer"] == 9.25


def test_scenarios_not_run_give_nulls_and_no_ratios():
    measured = {name: s for name, s in scenarios_measured().items() if name in ("pipeline", "latency")}
    derive(measured)
    assert not {"vs_peer", "rules_cpu_vs_passthrough", "ratio_to_baseline"} & set(measured["pipeline"]["figures"])
    summary = summary_of(measured)
    assert summary["pipeline_moves_per_s"] == 2_700.0 and summary["latency_p99_ms"] == 110.0
    assert [k for k, v in summary.items() if v is None] == [
        "peer_moves_per_s",
        "pipeline_vs_peer",
        "peer_latency_p99_ms",
        "latency_vs_faust_floor",
        "floor_latency_p99_ms",
        "floor_latency_vs_peer",
        "floor_faust_latency_vs_peer",
        "client_moves_per_s",
        "client_vs_peer",
        "single_client_p50_ms",
        "client_cpu_bound_vs_peer",
        "rules_cpu_vs_passthrough",
        "projector_cpu_vs_passthrough",
        "recovery_s",
    ]
    assert summary_of({}) == dict.fromkeys(SUMMARY_KEYS)
    failed = {"peer": {"figures": {"moves_per_s": spread(None)}}, "pipeline": measured["pipeline"]}
    derive(failed)  # a scenario whose every run failed has None medians: no ratio, no error
    assert "vs_peer" not in failed["pipeline"]["figures"] and summary_of(failed)["peer_moves_per_s"] is None


def test_every_summary_figure_and_ratio_is_one_the_scenarios_or_derive_make():
    named = {(f.scenario, f.key) for f in FIGURES}
    for key, source in SUMMARY.items():
        assert source is None or source in named or source == ("latency", "rate_held"), key
    assert ("pipeline", "vs_peer") in named and ("latency", "p99_vs_peer") in named and ("http", "vs_peer") in named


# --- skipped without node -------------------------------------------------------------------------
@pytest.fixture
def no_node(tmp_path, monkeypatch):
    """PATH with npm and the usual tools, but no node."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "npm").write_text("#!/bin/sh\nexit 0\n")
    (tools / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    return tmp_path


def test_without_node_the_peer_is_skipped_with_one_line_saying_why(no_node):
    reason = peer.unavailable()
    assert reason is not None and reason.startswith("node not found on PATH") and "npm" not in reason.split(";")[0]
    output = io.StringIO()
    report = runner.run(
        BenchStack(None, None, no_node / "bench"), QUICK, ["peer"], Console(file=output, width=80), "quick"
    )
    lines = [line for line in output.getvalue().splitlines() if "peer" in line]
    assert lines == [f"peer: skipped: {reason}"]  # one line, not wrapped at 80 columns
    assert report["skipped"] == {"peer": reason} and report["scenarios"] == {} and report["stack"] is None
    assert report["summary"] == dict.fromkeys(SUMMARY_KEYS)


def test_plylog_bench_peer_without_node_starts_nothing_and_exits_0(no_node, monkeypatch):
    from services.cli.main import app

    monkeypatch.setenv("PLYLOG_HOME", str(no_node / "home"))
    result = CliRunner().invoke(app, ["bench", "peer", "--quick", "--out", str(no_node / "out")])
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.output.count("skipped") == 1 and "node not found on PATH" in result.output
    assert "starting Kafka" not in result.output  # the peer alone needs no stack
    saved = json.loads(next((no_node / "out").glob("*.json")).read_text())
    assert saved["skipped"]["peer"].startswith("node not found") and saved["summary"]["peer_moves_per_s"] is None
    assert not (no_node / "home" / "bench" / "cache").exists()


def test_without_the_harness_the_reason_names_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv(peer.SOURCE_ENV, str(tmp_path / "nowhere"))
    assert (
        peer.unavailable()
        == f"no boardgame.io harness in {tmp_path / 'nowhere'} (set {peer.SOURCE_ENV} to its directory)"
    )


def test_the_latency_over_the_faust_floor_is_the_latency_p99_over_the_faust_relays_in_the_same_run():
    measured = {
        "latency": {"figures": {"p99_ms": {"median": 30.0, "min": 24.0, "max": 36.0, "runs": [24.0, 30.0, 36.0]}}},
        "floor": {"figures": {"faust_p99_ms": {"median": 20.0, "min": 16.0, "max": 24.0, "runs": [16.0, 20.0, 24.0]}}},
    }
    derive(measured)
    assert measured["latency"]["figures"]["p99_vs_faust_floor"] == {
        "median": 1.5,
        "min": 1.0,
        "max": 2.25,
        "runs": None,
    }
    assert summary_of(measured)["latency_vs_faust_floor"] == 1.5
