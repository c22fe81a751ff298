"""The timekeeper's queue (services/gateway/timekeeper.py) with a fake projection and submitter: no
number of matches whose claims never take effect holds up the others, and a claim is sent again
later and later, not every tick."""

from __future__ import annotations

import time

from services.gateway import timekeeper as tk
from services.gateway.metrics import Metrics
from services.gateway.timekeeper import Timekeeper


class Queue:
    def __init__(self, entries):
        self.entries = sorted(entries, key=lambda e: e[1])

    async def due_deadlines(self, now_ms, limit=100, offset=0):
        due = [e for e in self.entries if e[1] <= now_ms]
        return due[offset : offset + limit]


class Submitter:
    def __init__(self):
        self.records = []

    async def submit(self, record, wait=False, timeout_s=10.0):
        self.records.append(record)


def keeper(entries):
    queue, submitter = Queue(entries), Submitter()
    return Timekeeper(queue, submitter, 0.5, Metrics()), queue, submitter


async def test_stuck_matches_ahead_in_the_queue_do_not_hold_up_the_others():
    now = int(time.time() * 1000)
    stuck = [(f"stuck-{n}", now - 10_000 + n) for n in range(250)]  # their claims never take effect
    timekeeper, queue, submitter = keeper(stuck)
    assert await timekeeper.tick() == 250
    queue.entries.append(("fresh", now - 1))
    assert await timekeeper.tick() == 1 and submitter.records[-1]["match_id"] == "fresh"
    claim = submitter.records[-1]
    assert claim["player"] == "plylog-timekeeper" and claim["event_id"] == f"timeout-{now - 1}"


async def test_a_claim_still_listed_is_sent_again_with_a_growing_wait(monkeypatch):
    clock = [1_000.0]
    monkeypatch.setattr(tk.time, "time", lambda: clock[0])
    timekeeper, _, submitter = keeper([("m1", 1)])
    sent_at = []
    while clock[0] < 1_000 + 200:
        if await timekeeper.tick():
            sent_at.append(clock[0] - 1_000)
        clock[0] += 0.5
    assert sent_at[:5] == [0, 5, 15, 35, 75]
    assert len(submitter.records) == len(sent_at) <= 6
