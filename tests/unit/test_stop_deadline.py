"""The exit deadline of a worker whose batch failed (services/rules/stop_deadline.py)."""

from __future__ import annotations

import logging
import threading

from services.rules import stop_deadline


def test_the_worker_exits_with_its_code_and_says_why_when_the_stop_outlasts_the_deadline(caplog):
    exited, codes = threading.Event(), []

    def fake_exit(code: int) -> None:
        codes.append(code)
        exited.set()

    with caplog.at_level(logging.ERROR, logger="plylog.rules"):
        stop_deadline.arm(0.05, "a failed batch (KafkaError: refused)", exit=fake_exit)
        assert exited.wait(5)
    assert codes == [stop_deadline.EXIT_CODE] and codes[0] != 0
    assert [r.levelno for r in caplog.records] == [logging.ERROR]  # one line for the operator


def test_a_cancelled_deadline_never_exits():
    codes = []
    timer = stop_deadline.arm(0.2, "a failed batch", exit=codes.append)
    assert timer.daemon  # a stopped worker's process ends without waiting for it
    timer.cancel()
    timer.join(1)
    assert codes == []
