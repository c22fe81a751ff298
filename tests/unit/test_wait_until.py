"""The tests' one polling helper (tests/support.py): what it returns, and how it gives up."""

from __future__ import annotations

import itertools

import pytest

from tests.support import wait_until


def test_it_returns_the_first_truthy_answer():
    answers = iter([None, 0, [], ["ready"], ["later"]])
    assert wait_until(lambda: next(answers), timeout=5, every=0) == ["ready"]


def test_it_gives_up_naming_what_it_waited_for():
    asked = itertools.count()
    with pytest.raises(AssertionError, match=r"not within 0\.2 s: the pigeon"):
        wait_until(lambda: next(asked) < 0, timeout=0.2, what="the pigeon", every=0.01)
    assert next(asked) > 1  # it asked again until the deadline, not once
