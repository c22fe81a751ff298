"""The ops endpoints of the three services on the real broker and Redis: /livez, /readyz and the
Prometheus /metrics of a rules worker and a projector (on PLYLOG_OPS_PORT), the gateway's /livez
and /readyz; the metrics count what the services did, and readiness follows the lag."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from bench.procs import Service, free_port
from games.registry import GAME_MODULES
from tests.e2e.gateway_stack import gateway_process, unique_redis_prefix

from .harness import mixed_bot_traffic, produce, rules_worker, wait_until_answered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))  # as prometheus_client writes them
    pattern = re.escape(name) + (r"\{" + re.escape(wanted) + r"\}" if labels else r"") + r" ([0-9.e+-]+)$"
    found = re.search(pattern, text, re.M)
    return float(found.group(1)) if found else 0.0


def wait_for(url: str, status: int, timeout: float = 60.0) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = httpx.get(url, timeout=3)
            if answer.status_code == status:
                return answer
        except httpx.HTTPError:
            answer = None
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{url} did not answer {status} in {timeout}s: "
                f"{answer.status_code if answer else 'no answer'} {answer.text if answer else ''}"
            )
        time.sleep(0.3)


def test_rules_worker_and_projector_serve_probes_and_metrics_that_count_what_they_did(
    kafka_bootstrap, contract_topics, redis_db_url, tmp_path
):
    topics = contract_topics(partitions=3)
    rules_port, projector_port = free_port(), free_port()
    prefix = unique_redis_prefix()
    worker = rules_worker(kafka_bootstrap, topics, tmp_path, PLYLOG_OPS_PORT=str(rules_port), PLYLOG_READY_LAG="0")
    projector = Service(
        "projector-1",
        "services.projector",
        ("--name", "projector-1"),
        {
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "PLYLOG_TOPIC_PREFIX": topics.prefix,
            "REDIS_URL": redis_db_url,
            "PLYLOG_REDIS_PREFIX": prefix,
            "PLYLOG_OPS_PORT": str(projector_port),
            "PLYLOG_READY_LAG": "0",
        },
        tmp_path,
    )
    gateway, url = gateway_process(kafka_bootstrap, topics, redis_db_url, prefix, tmp_path)
    traffic = mixed_bot_traffic(list(GAME_MODULES), matches=12, seed=5, prefix="ops-")
    try:
        for service in (worker, projector, gateway):
            service.start()
        for service in (worker, projector, gateway):
            service.wait_ready()
        rules, proj = f"http://127.0.0.1:{rules_port}", f"http://127.0.0.1:{projector_port}"
        for base in (rules, proj, url):
            assert httpx.get(base + "/livez").status_code == 200
            ready = wait_for(base + "/readyz", 200).json()
            assert ready["status"] == "ok"
        assert wait_for(rules + "/readyz", 200).json()["partitions"] == [0, 1, 2]
        produce(kafka_bootstrap, topics.moves, traffic)
        wait_until_answered(kafka_bootstrap, topics, len(traffic), workers=[worker])
        wait_for(proj + "/readyz", 200)  # caught up again: lag 0
        deadline = time.monotonic() + 30
        while metric(httpx.get(rules + "/metrics").text, "plylog_rules_records_total") < len(traffic):
            assert time.monotonic() < deadline, httpx.get(rules + "/metrics").text
            time.sleep(0.5)
        text = httpx.get(rules + "/metrics").text
        accepted = metric(text, "plylog_rules_results_total", status="accepted", code="")
        rejected = sum(
            float(v)
            for v in re.findall(
                r'plylog_rules_results_total\{code="[a-z_]+",status="rejected"\} '
                r"([0-9.e+]+)",
                text,
            )
        )
        assert accepted > 0 and rejected > 0, text
        assert metric(text, "plylog_rules_batch_seconds_count") > 0
        assert metric(text, "plylog_rules_assigned_partitions") == 3
        assert metric(text, "plylog_rules_lag", partition="0") == 0
        assert metric(text, "plylog_rules_recoveries_total") >= 1 and "plylog_rules_recovery_seconds" in text
        text = httpx.get(proj + "/metrics").text
        assert metric(text, "plylog_projector_records_total", kind="result") == accepted + rejected + metric(
            httpx.get(rules + "/metrics").text, "plylog_rules_results_total", status="duplicate", code=""
        )
        assert metric(text, "plylog_projector_results_total", verdict="applied") > 0
        assert metric(text, "plylog_projector_lag", topic=topics.results, partition="0") == 0
        assert metric(text, "plylog_projector_batch_seconds_count") > 0
        assert "plylog_projector_recovery_seconds" in text
        assert "plylog_gateway_requests_total" in httpx.get(url + "/metrics").text
        assert httpx.get(rules + "/nowhere").status_code == 404
    finally:
        for service in (gateway, projector, worker):
            service.stop()
