"""Which record makes which notification (services/notifier/rules.py), the ids, the backoff, the
signature and the endpoint checks: pure parts of the notifier."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.common.notify_store import EndpointProblem, Guard, email_address, webhook_url
from services.notifier import rules
from services.notifier.channels import signature

DAY = rules.DAY_MS


def result(seq: int, actor: str | None, to_move: list[int], *, status="active", clock=None, events=(), **extra):
    view = {
        "match_id": "m-1",
        "game": "strands",
        "seats": ["ann", "bob"],
        "status": status,
        "seq": seq,
        "to_move": to_move,
        "clock": clock,
    }
    record = {"status": "accepted", "duplicate": False, "match_id": "m-1", "seq": seq, "player": actor}
    return {**record, "events": list(events), "view": view, "at": "2026-12-06T05:00:00.000Z", **extra}


def kinds(found: list[rules.Notification]) -> list[tuple[str, str]]:
    return [(n.kind, n.player) for n in found]


def test_a_move_tells_the_player_now_to_move_and_not_the_one_who_moved():
    assert kinds(rules.from_result(result(5, "ann", [1]))) == [("your_move", "bob")]


def test_a_turn_of_several_actions_notifies_once_at_its_start():
    assert rules.from_result(result(6, "bob", [1])) == []


def test_rejected_duplicate_and_finished_results_notify_nobody():
    assert rules.from_result({**result(5, "ann", [1]), "status": "rejected"}) == []
    assert rules.from_result({**result(5, "ann", [1]), "duplicate": True}) == []
    assert rules.from_result(result(9, "ann", [], status="over")) == []


def test_bots_and_hot_seat_matches_are_never_notified():
    hot = result(3, "ann", [1])
    hot["view"]["seats"] = ["ann", "ann"]
    assert rules.from_result(hot) == []
    bot = result(3, "ann", [1])
    bot["view"]["seats"] = ["ann", "bot:mcts-2"]
    assert rules.from_result(bot) == []


def test_a_create_that_reserves_a_seat_invites_that_player():
    created = {"type": "match_created", "invited": [None, "bob"], "seats": ["ann", None]}
    found = rules.from_result(result(1, "ann", [], status="waiting", events=[created]))
    assert kinds(found) == [("invited", "bob")]
    assert found[0].details == {"seat": 1, "by": "ann"}


def test_a_correspondence_turn_schedules_a_reminder_before_the_deadline():
    clock = {"kind": "correspondence", "days_per_move": 2, "deadline_ms": 10 * DAY}
    found = rules.from_result(result(4, "ann", [1], clock=clock))
    assert kinds(found) == [("your_move", "bob"), ("clock_low", "bob")]
    assert found[1].due_ms == 10 * DAY - DAY // 2  # 2 days per move: 12 h before
    assert found[0].due_ms == 0


def test_a_live_clock_schedules_no_reminder():
    clock = {"initial_ms": 60_000, "increment_ms": 0, "remaining_ms": [1, 1], "since_ms": 5}
    assert kinds(rules.from_result(result(4, "ann", [1], clock=clock))) == [("your_move", "bob")]


@pytest.mark.parametrize(("days", "hours"), [(1, 6), (2, 12), (3, 18), (5, 24), (14, 24)])
def test_the_reminder_lead_is_a_quarter_of_the_days_at_most_a_day(days, hours):
    assert rules.reminder_lead_ms(days) == hours * 3_600_000


def test_an_outcome_tells_each_player_how_it_ended():
    outcome = {
        "match_id": "m-1",
        "game": "strands",
        "players": ["ann", "bob"],
        "outcome": {"winner": 0, "reason": "resign"},
        "rated": True,
        "seq": 12,
        "ended_at": "2026-12-06T05:00:00.000Z",
    }
    found = rules.from_outcome(outcome)
    assert [(n.kind, n.player, n.details["result"]) for n in found] == [
        ("match_over", "ann", "won"),
        ("match_over", "bob", "lost"),
    ]
    draw = rules.from_outcome({**outcome, "outcome": {"winner": None, "reason": "aborted"}})
    assert {n.details["result"] for n in draw} == {"aborted"}


def test_ids_are_the_same_for_the_same_event_and_differ_otherwise():
    first, again = rules.from_result(result(5, "ann", [1])), rules.from_result(result(5, "ann", [1]))
    assert [n.id for n in first] == [n.id for n in again]
    assert first[0].id != rules.from_result(result(7, "ann", [1]))[0].id
    assert rules.delivery_id(first[0].id, "wh-1") != rules.delivery_id(first[0].id, "em-1")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=12,
)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.dictionaries(st.sampled_from(["status", "view", "seq", "match_id", "player", "events"]), json_values))
def test_any_record_makes_a_list_and_never_raises(record):
    assert isinstance(rules.from_result(record), list)
    assert isinstance(rules.from_outcome(record), list)


@given(
    st.integers(1, 200),
    st.sampled_from(["ann", "bob", "bot:x", None]),
    st.lists(st.integers(0, 1), max_size=2, unique=True),
    st.lists(st.sampled_from(["ann", "bob", "cy", "bot:x", None]), min_size=2, max_size=2),
)
def test_nobody_is_told_of_their_own_move_and_no_bot_is_told_anything(seq, actor, to_move, seats):
    record = result(seq, actor, to_move)
    record["view"]["seats"] = seats
    found = rules.from_result(record)
    assert all(not n.player.startswith("bot:") for n in found)
    assert all(n.player != actor for n in found if n.kind == "your_move")
    assert len({n.id for n in found}) == len(found)


@given(st.integers(1, 60), st.text(max_size=20), st.floats(0.01, 10), st.floats(1, 5000))
def test_backoff_doubles_up_to_the_cap_with_a_jitter_of_at_most_half(attempt, delivery, base, cap):
    wait = rules.backoff_s(attempt, delivery, base, cap)
    ceiling = min(cap, base * 2 ** (attempt - 1))
    assert ceiling * 0.5 <= wait < ceiling
    assert wait == rules.backoff_s(attempt, delivery, base, cap)  # replayable


def test_the_signature_checks_as_the_docs_say():
    body, secret = b'{"v":1}', "whsec_abc"
    header = signature(secret, 1_765_000_000, body)
    t, v1 = (part.split("=", 1)[1] for part in header.split(","))
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, v1)
    assert signature("whsec_other", 1_765_000_000, body) != header


GUARD = Guard(frozenset({6379, 9092, 8000}))


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/x",
        "file:///etc/passwd",
        "http://user:pw@example.com/",
        "http://127.0.0.1:9000/",
        "http://10.0.0.7/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost/",
        "https://example.com/" + "x" * 600,
    ],
)
def test_webhook_urls_that_are_refused(url):
    with pytest.raises(EndpointProblem):
        webhook_url(url, GUARD)


def test_the_stacks_own_ports_are_refused_even_where_private_addresses_are_allowed():
    allowing = Guard(frozenset({6379, 9092, 8000}), allow_private=True)
    assert webhook_url("http://127.0.0.1:9000/hook", allowing) == ("127.0.0.1", 9000)
    for port in (6379, 9092, 8000):
        with pytest.raises(EndpointProblem, match="own services"):
            webhook_url(f"http://127.0.0.1:{port}/", allowing)
    assert webhook_url("https://hooks.example.com/plylog", GUARD) == ("hooks.example.com", 443)


def test_email_addresses():
    assert email_address("ann@example.com") == "ann@example.com"
    for bad in ("ann", "ann@", "@x.org", "a b@x.org", "a@x.org\r\nBcc: eve@x.org", "a" * 250 + "@x.org"):
        with pytest.raises(EndpointProblem):
            email_address(bad)
