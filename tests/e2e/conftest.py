"""The whole stack as real processes for end-to-end tests: rules worker, projector and gateway on
the test broker and Redis, with topics and a Redis key prefix of their own (one stack per module)."""

from __future__ import annotations

import pytest

from .gateway_stack import running_stack
from .notify_support import http_receiver as receiving
from .notify_support import smtp_mailbox

PARTITIONS = 3


@pytest.fixture(scope="module")
def gateway_env() -> dict[str, str]:
    """More settings for this module's gateway (a module overrides this fixture to add some)."""
    return {}


@pytest.fixture(scope="module")
def stack(kafka_bootstrap, redis_url, tmp_path_factory, gateway_env):
    with running_stack(
        kafka_bootstrap,
        redis_url,
        tmp_path_factory.mktemp("e2e"),
        "e2e",
        PARTITIONS,
        # bots act far faster than people: lift the per-player limit
        PLYLOG_RATE_PER_S="5000",
        PLYLOG_RATE_BURST="5000",
        PLYLOG_SSE_KEEPALIVE_S="1",
        PLYLOG_TIMEKEEPER_INTERVAL_S="0.2",
        **gateway_env,
    ) as running:
        yield running


@pytest.fixture(scope="module")
def http_receiver():
    """A webhook receiver in this process: (its base URL, what it received)."""
    with receiving() as receiver:
        yield receiver


@pytest.fixture(scope="module")
def mailbox():
    """An SMTP server in this process: (its port, the Mailbox)."""
    with smtp_mailbox() as box:
        yield box
