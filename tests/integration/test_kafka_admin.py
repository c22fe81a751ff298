"""services/common/kafka_admin.py on the real broker."""

from __future__ import annotations

import threading
import time

import pytest

from services.common import kafka_admin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_configs_a_topic_does_not_have_yet_are_set_and_the_others_kept(kafka_bootstrap, topic_prefix):
    """Given a topic made with one config (by an older version), when the configs it lacks are
    ensured, then they are set and the one it had stays. (On a cluster the same call once met a
    broker that did not show the just-made topic's configs yet, and kafka-python's own check of
    the names, now skipped, refused them all: a race a single broker does not reproduce.)"""
    name = topic_prefix + "configs"
    kafka_admin.create_topics(kafka_bootstrap, [kafka_admin.TopicSpec(name, 1, {"retention.ms": "-1"})])
    try:
        wanted = {"cleanup.policy": "compact", "segment.ms": "60000"}
        assert kafka_admin.ensure_topic_configs(kafka_bootstrap, name, wanted) == wanted
        configs = kafka_admin.topic_configs(kafka_bootstrap, name)
        assert {k: configs.get(k) for k in ("retention.ms", *wanted)} == {"retention.ms": "-1", **wanted}
        assert kafka_admin.ensure_topic_configs(kafka_bootstrap, name, wanted) == {}
    finally:
        kafka_admin.delete_topics(kafka_bootstrap, [name])


def test_partition_counts_asks_again_for_a_topic_that_appears_while_it_waits(kafka_bootstrap, topic_prefix):
    """Given a topic that does not exist yet, when it is made while partition_counts waits for
    missing topics, then its count is returned; a topic that never appears is None after the wait.
    (On a three-broker cluster a worker started right after its topics were made once read them
    as missing from a broker whose metadata had not caught up, and refused to start.)"""
    late, never = topic_prefix + "late", topic_prefix + "never"
    timer = threading.Timer(1.0, kafka_admin.create_topics, (kafka_bootstrap, [kafka_admin.TopicSpec(late, 2)]))
    timer.start()
    try:
        assert kafka_admin.partition_counts(kafka_bootstrap, [late], wait_missing=20) == {late: 2}
        started = time.monotonic()
        assert kafka_admin.partition_counts(kafka_bootstrap, [late, never], wait_missing=1.0) == {late: 2, never: None}
        assert time.monotonic() - started >= 1.0
        assert kafka_admin.partition_counts(kafka_bootstrap, [never]) == {never: None}
    finally:
        timer.join()
        kafka_admin.delete_topics(kafka_bootstrap, [late])


def test_a_groups_coordinator_is_found_on_the_real_broker(kafka_bootstrap, topic_prefix):
    """Given a group nobody has used, when the rules worker's wait for its coordinator runs, then
    it returns as soon as the broker names one (it asks the broker, not a cache of ours)."""
    waited = kafka_admin.wait_for_group_coordinator(kafka_bootstrap, topic_prefix + "never-joined", timeout=20)
    assert 0 <= waited < 20
