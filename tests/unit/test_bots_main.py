"""`python -m services.bots` start-up: it waits for its group's coordinator before the service joins,
and a wait that fails is said, not fatal (fakes stand in for the broker here; the e2e test checks
that the group waited for is the one joined)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from services.bots import __main__ as bots_main
from services.common import kafka_admin
from services.common.settings import Topics


@dataclass
class StartUp:
    """The start-up steps in their order; `failing_wait` makes the coordinator wait fail."""

    steps: list[tuple[str, str]] = field(default_factory=list)
    failing_wait: bool = False


@pytest.fixture
def start_up(monkeypatch, tmp_path) -> StartUp:
    start_up = StartUp()
    monkeypatch.setenv("PLYLOG_HOME", str(tmp_path))
    monkeypatch.setenv("PLYLOG_TOPIC_PREFIX", "t.")
    monkeypatch.setenv("PLYLOG_BOT_SECRET", "unit-test-bot-secret-0123456789")
    monkeypatch.setattr(kafka_admin, "partition_counts", lambda bootstrap, names, **_: {n: 3 for n in names})

    def wait(bootstrap, group, **_):
        start_up.steps.append(("wait", group))
        if start_up.failing_wait:
            raise kafka_admin.KafkaAdminError(f"no coordinator for group {group} within 30s: not yet")
        return 0.0

    class Service:
        def __init__(self, settings, *_):
            self.group = settings.topics.bots_group

        async def run(self):
            start_up.steps.append(("run", self.group))

    monkeypatch.setattr(kafka_admin, "wait_for_group_coordinator", wait)
    monkeypatch.setattr(bots_main, "BotService", Service)
    return start_up


def test_the_coordinator_of_the_bots_group_is_waited_for_before_the_service_joins(start_up):
    assert bots_main.main([]) == 0
    assert start_up.steps == [("wait", "t.bots"), ("run", "t.bots")]
    assert Topics("t.").bots_group == "t.bots"


def test_a_wait_that_fails_is_said_and_the_service_starts_anyway(start_up, capsys):
    start_up.failing_wait = True
    assert bots_main.main([]) == 0
    assert start_up.steps == [("wait", "t.bots"), ("run", "t.bots")]
    assert (
        "plylog bots: no coordinator for group t.bots within 30s: not yet; starting anyway" in capsys.readouterr().err
    )
