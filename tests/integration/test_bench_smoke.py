"""The benchmark harness on the real broker and Redis, with tiny loads, so it cannot rot: every
scenario runs once and gives sane numbers, and the report, plots and the docs' table are written.
The boardgame.io peer runs too (~30 s; it needs Node.js and npm: without them its checks are
skipped, a failure under CI=true)."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os

import pytest
from rich.console import Console

from bench import peer, report, runner
from bench.figures import FIGURES, RATIOS, SUMMARY
from bench.scenarios import QUICK
from bench.stack import BenchStack
from tests.conftest import CI

pytestmark = pytest.mark.integration

TINY = dataclasses.replace(
    QUICK,
    moves=800,
    open_matches=60,
    latency_rate=200.0,
    latency_seconds=3.0,
    latency_warmup_s=0.5,
    latency_bots=60,
    memory_matches=120,
    replay_matches=4,
    ws_matches=40,
    ws_single_matches=1,
    peer_warmup_matches=10,
    peer_matches=30,
    peer_latency_matches=20,
    recovery_moves=3_000,
    recovery_active=60,
)
PEER_MISSING = peer.unavailable()
#: the ratios to the peer (gone, with its own figures, when it cannot run)
PEER_RATIOS = {(scenario, name) for scenario, _, other, _, name in RATIOS if other == "peer"}

#: figures that are not rates or sizes (a speed-up below 1 is a finding, not a fault)
NOT_POSITIVE = {"missed_ticks", "unanswered", "failed", "pending"}


@pytest.fixture(scope="module")
def quick_report(kafka_bootstrap, redis_url, tmp_path_factory):
    work = tmp_path_factory.mktemp("bench")
    stack = BenchStack(kafka_bootstrap, redis_url, work, partitions=4)
    output = io.StringIO()
    if PEER_MISSING and CI:
        pytest.fail(f"CI=true, so the peer must run: {PEER_MISSING}", pytrace=False)
    result = runner.run(stack, TINY, [], Console(file=output, width=160), "quick")
    written = report.write(result, work / "results", "smoke")
    return result, written, output.getvalue()


def _peer_made(figure) -> bool:
    return figure.scenario == "peer" or (figure.scenario, figure.key) in PEER_RATIOS


def test_every_scenario_runs_and_gives_sane_numbers(quick_report):
    _result, written, console = quick_report
    saved = json.loads(written[0].read_text())
    assert list(saved["scenarios"]) == [name for name in runner.SCENARIOS if not (PEER_MISSING and name == "peer")]
    assert saved["skipped"] == ({"peer": PEER_MISSING} if PEER_MISSING else {})
    for name, summary in saved["scenarios"].items():
        assert summary["errors"] == [], (name, summary["errors"], console)
        assert summary["figures"], name
        for key, values in summary["figures"].items():
            median = values["median"]
            assert median is not None and math.isfinite(median), (name, key, values)
            if key.removeprefix("faust_") not in NOT_POSITIVE:  # the floor's Faust relay: faust_unanswered ...
                assert median > 0, (name, key, values)
    missing = [
        (f.scenario, f.key)
        for f in FIGURES
        if not (PEER_MISSING and _peer_made(f)) and f.key not in saved["scenarios"][f.scenario]["figures"]
    ]
    assert missing == []  # every figure of the summary table is measured
    unmeasured = [key for key, value in saved["summary"].items() if value is None]
    assert sorted(unmeasured) == sorted(
        key
        for key, source in SUMMARY.items()
        if source is None or (PEER_MISSING and (source[0] == "peer" or "vs_peer" in source[1]))
    )


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
    ws = figures["ws"]
    assert ws["failed"] == 0 and ws["matches"] == TINY.ws_matches
    assert ws["moves"] >= TINY.ws_matches * 40  # every Strands match played to its end (~49 moves)
    assert ws["p50_ms"] <= ws["p99_ms"] <= ws["max_ms"] and ws["single_p50_ms"] <= ws["single_p99_ms"]
    assert 20 < ws["gateway_cpu_us_per_move"] < 100_000  # the gateway at work, not a misread unit
    services = ws["gateway_cpu_us_per_move"] + ws["rules_cpu_us_per_move"] + ws["projector_cpu_us_per_move"]
    assert ws["services_cpu_us_per_move"] == pytest.approx(services)
    assert ws["machine_cpu_us_per_move"] > 0.9 * services  # every core's busy time holds the services' (ticks of 10 ms)
    assert 0 < ws["cores_busy"] <= len(os.sched_getaffinity(0)) + 0.1
    floor = figures["floor"]
    assert floor["unanswered"] == 0  # every move went both hops and reached Redis
    assert floor["p50_ms"] <= floor["p99_ms"] <= floor["max_ms"] and floor["results_p50_ms"] <= floor["results_max_ms"]
    assert floor["faust_unanswered"] == 0  # and through the Faust relay
    assert floor["faust_p50_ms"] <= floor["faust_p99_ms"] <= floor["faust_max_ms"]
    recovery = figures["recovery"]
    assert (
        recovery["finished_moves"] >= TINY.recovery_moves * 0.9 and recovery["active_matches"] >= TINY.recovery_active
    )
    assert recovery["changelog_records"] >= TINY.recovery_active  # at least one state per active match
    assert 0.5 < recovery["recovery_s"] <= recovery["recovery_max_s"] < 120
    summary = quick_report[0]["summary"]
    assert summary["recovery_s"] == recovery["recovery_s"]
    assert summary["client_moves_per_s"] == ws["moves_per_s"] and summary["single_client_p50_ms"] == ws["single_p50_ms"]
    assert quick_report[0]["summary_sources"]["client_moves_per_s"] == "ws.moves_per_s"


def test_plots_and_the_docs_table_are_written(quick_report):
    result, written, _ = quick_report
    assert [p.suffix for p in written] == [".json", ".png", ".png"]
    assert all(p.stat().st_size > 5_000 for p in written[1:])
    text = report.markdown_table(result, written[0].name)
    assert f"`bench/results/{written[0].name}`" in text
    assert "| raw Kafka pass-through |" in text and "≥ 5,000" in text


def test_the_peer_runs_beside_and_every_counterpart_is_a_ratio_to_it(quick_report):
    if PEER_MISSING:
        pytest.skip(PEER_MISSING)
    result, _, console = quick_report
    figures = {name: {k: v["median"] for k, v in s["figures"].items()} for name, s in result["scenarios"].items()}
    mine = figures["peer"]
    assert result["scenarios"]["peer"]["errors"] == [], console
    assert mine["matches"] == TINY.peer_matches and mine["latency_matches"] == TINY.peer_latency_matches
    assert mine["p50_ms"] <= mine["p99_ms"] <= mine["max_ms"]
    assert mine["latency_p50_ms"] <= mine["latency_p99_ms"] <= mine["latency_max_ms"]
    assert mine["latency_offered_per_s"] == TINY.latency_rate  # the same offered rate as plylog's latency scenario
    assert 0 < mine["latency_rate_held"] <= 1.1
    assert 50 < mine["server_cpu_us_per_move"] < 20_000  # a node process at work, not a misread unit
    assert figures["pipeline"]["vs_peer"] == pytest.approx(figures["pipeline"]["moves_per_s"] / mine["moves_per_s"])
    assert figures["latency"]["p99_vs_peer"] == pytest.approx(figures["latency"]["p99_ms"] / mine["latency_p99_ms"])
    assert figures["http"]["vs_peer"] == pytest.approx(figures["http"]["moves_per_s"] / mine["moves_per_s"])
    assert figures["ws"]["vs_peer"] == pytest.approx(figures["ws"]["moves_per_s"] / mine["moves_per_s"])
    assert figures["ws"]["cpu_bound_vs_peer"] == pytest.approx(
        figures["ws"]["cpu_bound_moves_per_s"] / mine["moves_per_s"]
    )
    assert figures["floor"]["p99_vs_peer"] == pytest.approx(figures["floor"]["p99_ms"] / mine["latency_p99_ms"])
    assert mine["all_in_cpu_us_per_move"] > mine["server_cpu_us_per_move"]  # the server and its clients
    summary = result["summary"]
    assert summary["pipeline_vs_peer"] == figures["pipeline"]["vs_peer"]
    assert summary["client_vs_peer"] == figures["ws"]["vs_peer"]  # seat-socket clients, like the peer's
    assert summary["peer_latency_p99_ms"] == mine["latency_p99_ms"]
    assert summary["latency_rate_held"] == figures["latency"]["rate_held"]
    assert summary["floor_latency_vs_peer"] == figures["floor"]["p99_vs_peer"]
    assert summary["floor_faust_latency_vs_peer"] == pytest.approx(
        figures["floor"]["faust_p99_ms"] / mine["latency_p99_ms"]
    )
    assert summary["client_cpu_bound_vs_peer"] == figures["ws"]["cpu_bound_vs_peer"]
    assert summary["latency_vs_faust_floor"] == pytest.approx(
        figures["latency"]["p99_ms"] / figures["floor"]["faust_p99_ms"]
    )
    table = report.markdown_table(result, "smoke.json")
    for row in (
        "| pipeline / boardgame.io closed loop |",
        "| latency p99 / boardgame.io's at the same offered rate |",
        "| HTTP moves / boardgame.io closed loop |",
        "| seat-socket moves / boardgame.io closed loop |",
        "| boardgame.io: closed loop, 30 matches",
    ):
        assert row in table, row
