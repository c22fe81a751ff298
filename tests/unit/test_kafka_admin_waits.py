"""kafka_admin.wait_for_group_coordinator: asks again while the broker has no coordinator yet."""

from __future__ import annotations

import kafka.errors
import pytest

from services.common import kafka_admin


class _Admin:
    """A KafkaAdminClient whose describe_groups raises the given errors, then answers."""

    def __init__(self, errors):
        self.errors = list(errors)
        self.asked = 0

    def describe_groups(self, group_ids):
        self.asked += 1
        if self.errors:
            raise self.errors.pop(0)
        return {group_ids[0]: {"group_state": "Dead"}}

    def close(self):
        pass


def _with_admin(monkeypatch, errors) -> _Admin:
    client = _Admin(errors)
    monkeypatch.setattr(kafka_admin, "admin_client", lambda bootstrap, timeout, auth=None: client)
    return client


def test_a_new_broker_without_its_offsets_topic_yet_is_asked_again(monkeypatch):
    """Given a broker that answers "coordinator not available" twice (a new broker making
    __consumer_offsets: kafka-python's error says it is worth asking again), when the wait runs,
    then it asks a third time and returns."""
    error = kafka.errors.CoordinatorNotAvailableError
    client = _with_admin(monkeypatch, [error("making __consumer_offsets"), error("still making it")])
    waited = kafka_admin.wait_for_group_coordinator("b:9092", "plylog.rules", interval=0.001)
    assert client.asked == 3
    assert waited >= 0


def test_an_error_asking_again_cannot_mend_is_reported_at_once(monkeypatch):
    client = _with_admin(monkeypatch, [kafka.errors.GroupAuthorizationFailedError("not allowed")])
    with pytest.raises(kafka_admin.KafkaAdminError, match=r"cannot find the coordinator of group plylog\.rules"):
        kafka_admin.wait_for_group_coordinator("b:9092", "plylog.rules", interval=0.001)
    assert client.asked == 1


def test_a_coordinator_that_never_comes_ends_the_wait_with_the_reason(monkeypatch):
    error = kafka.errors.CoordinatorNotAvailableError
    _with_admin(monkeypatch, [error("no") for _ in range(10_000)])
    with pytest.raises(kafka_admin.KafkaAdminError, match=r"no coordinator for group g within 0.05s"):
        kafka_admin.wait_for_group_coordinator("b:9092", "g", timeout=0.05, interval=0.001)
