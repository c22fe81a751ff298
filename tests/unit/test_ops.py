"""The ops server of the workers (services/common/ops.py) on a real socket: /readyz follows what
the loop published (assigned, recovered, lag within PLYLOG_READY_LAG), /livez the loop's beat."""

import time

import httpx
import pytest

from bench.procs import free_port
from services.common import ops
from services.common.ops import OpsState, Readiness


@pytest.fixture
def served():
    state = OpsState("projector", "projector-1", ready_lag=10)
    port = free_port()
    server = ops.serve(state, "127.0.0.1", port)
    yield state, f"http://127.0.0.1:{port}"
    server.shutdown()


def test_ready_only_when_assigned_recovered_and_caught_up(served):
    state, url = served
    assert httpx.get(url + "/readyz").status_code == 503  # nothing published yet
    state.publish(Readiness(assigned=True, recovered=False, lag=0))
    assert httpx.get(url + "/readyz").json()["recovered"] is False
    state.publish(Readiness(assigned=True, recovered=True, lag=11))
    behind = httpx.get(url + "/readyz")
    assert behind.status_code == 503 and behind.json()["caught_up"] is False and behind.json()["lag"] == 11
    state.publish(Readiness(assigned=True, recovered=True, lag=10, detail={"partitions": [1]}))
    ready = httpx.get(url + "/readyz")
    assert ready.status_code == 200 and ready.json()["partitions"] == [1]
    state.publish(Readiness(assigned=True, recovered=True, lag=None))  # Kafka does not answer: lag unknown
    assert httpx.get(url + "/readyz").status_code == 503


def test_live_while_the_loop_beats(served, monkeypatch):
    state, url = served
    assert httpx.get(url + "/livez").status_code == 200
    monkeypatch.setattr(ops, "LIVE_WITHIN_S", 0.5)
    time.sleep(0.6)
    stalled = httpx.get(url + "/livez")
    assert stalled.status_code == 503 and stalled.json()["loop_last_beat_s"] >= 0.5
    monkeypatch.setattr(ops, "LIVE_WITHIN_S", 60.0)  # the beat below is fresh however slow the machine
    state.beat()
    assert httpx.get(url + "/livez").status_code == 200


def test_metrics_and_unknown_paths(served):
    state, url = served
    from prometheus_client import Counter

    Counter("plylog_test_things", "things", registry=state.registry).inc(3)
    assert "plylog_test_things_total 3.0" in httpx.get(url + "/metrics").text
    assert httpx.get(url + "/elsewhere").status_code == 404


def test_no_port_no_server():
    assert ops.serve(OpsState("rules", "rules-1", 0), "127.0.0.1", 0) is None
