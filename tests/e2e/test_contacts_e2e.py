"""A player's contact addresses end to end (docs/personal-data.md, docs/notifications.md): an e-mail
address and a webhook URL registered through the gateway live only in the player's sealed profile
on Kafka; the notifier opens them when it sends, to a real SMTP server and HTTP receiver, and they
appear in no Redis key or value. After `plylog players erase`, the addresses are nowhere in Redis,
the deliveries queued for the player are gone from the outbox, and nothing more reaches them: not
the queued reminder when it comes due, not a notification of a later record."""

from __future__ import annotations

import secrets
import time
import uuid

import orjson
import pytest

from games.playout import random_playout_records
from services.common.kafka_read import read_topic
from services.common.notify_store import keys_prefix
from services.common.profiles import ERASED_NAME
from services.notifier import rules
from tests.integration.harness import produce
from tests.support import record

from .gateway_stack import RunningStack, guest, running_stack
from .notify_support import hooks, mails, notifier_on, register_endpoint, wait_until
from .test_erasure_e2e import cli, redis_text

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
ONE_DAY = {"kind": "correspondence", "days_per_move": 1, "vacation_days": 7}
OPTIONS = {"layout": "small-4"}
HOUR_MS = 3_600_000
REMINDER_IN_MS = 25_000  # the queued reminder comes due this long after its record: erased before


@pytest.fixture(scope="module")
def world(kafka_bootstrap, redis_url, tmp_path_factory, mailbox):
    home = tmp_path_factory.mktemp("contacts")
    with (
        running_stack(kafka_bootstrap, redis_url, home, "contacts", 3, PLYLOG_NOTIFY_ALLOW_PRIVATE="1") as stack,
        notifier_on(stack, home, mailbox[0]) as notifier,
    ):
        yield stack, notifier


def _ms() -> int:
    return int(time.time() * 1000)


def _invite(stack: RunningStack, by: str, invited: str) -> str:
    """A create that reserves a seat for `invited`: they are told `invited` at once."""
    match_id = f"i{uuid.uuid4().hex[:10]}"
    create = {"type": "create", "game": "strands", "seats": [by, None], "invited": [None, invited], "options": OPTIONS}
    produce(stack.bootstrap, stack.topics.moves, [(match_id.encode(), record(match_id, by, create, 0, at_ms=_ms()))])
    return match_id


def _state(stack: RunningStack, delivery: str) -> dict[bytes, bytes]:
    return stack.redis().hgetall(f"{keys_prefix(stack.keys.prefix)}d:{delivery}")


def _told(received, path: str, match_id: str, kind: str) -> bool:
    return any(
        orjson.loads(b)["match_id"] == match_id and orjson.loads(b)["kind"] == kind for _, b in hooks(received, path)
    )


def _read_everything(stack: RunningStack) -> bool:
    """The notifier has read every record now on its topics (its offsets are in Redis)."""
    offsets = {k.decode(): int(v) for k, v in stack.redis().hgetall(f"{keys_prefix(stack.keys.prefix)}offsets").items()}
    topics = (stack.topics.results, stack.topics.outcomes)
    return all(offsets.get(f"{t}:{r.partition}", 0) > r.offset for t in topics for r in read_topic(stack.bootstrap, t))


def test_addresses_live_only_in_the_sealed_profile_and_erasure_ends_every_delivery(world, http_receiver, mailbox):
    stack, _ = world
    base, received = http_receiver
    box = mailbox[1]
    tag = secrets.token_hex(6)  # in both addresses: a scan of Redis for it finds either
    address, path = f"zed-{tag}@example.org", f"/ok/zed-{tag}"
    zed, zed_auth = guest(stack, f"Zed{tag}")
    kit, kit_auth = guest(stack, "kit")
    mail = register_endpoint(stack, zed_auth, channel="email", address=address)
    hook = register_endpoint(stack, zed_auth, channel="webhook", url=base + path)
    register_endpoint(stack, kit_auth, channel="webhook", url=f"{base}/ok/kit-{tag}")
    assert mail["address"] == address and hook["url"] == base + path  # the answer shows them to their owner
    listed = {e["id"]: e for e in stack.http.get("/v1/notifications/endpoints", headers=zed_auth).json()["endpoints"]}
    assert listed[mail["id"]]["address"] == address and listed[hook["id"]]["url"] == base + path
    client = stack.redis()
    assert tag.encode() not in redis_text(client)  # neither address, in any key or value

    # told at once: an invitation, by e-mail and webhook, opened from the profile by the notifier
    invite = _invite(stack, kit, zed)
    wait_until(lambda: _told(received, path, invite, "invited"), what="zed's webhook")
    (notification,) = [h["Plylog-Notification"] for h, _ in hooks(received, path)]
    wait_until(lambda: [m["Plylog-Notification"] for m in mails(box, address)] == [notification], what="zed's e-mail")

    # queued: a correspondence reminder for zed that comes due in REMINDER_IN_MS
    late = f"c{uuid.uuid4().hex[:10]}"
    start = _ms() - 18 * HOUR_MS + REMINDER_IN_MS - 1000  # zed's move is due in 24 h from kit's (1 s later)
    steps = random_playout_records("strands", OPTIONS, 1, late, (kit, zed), start_ms=start, clock=ONE_DAY)
    first_two = [next(steps), next(steps)]
    (reminder,) = [n for n in rules.from_result(first_two[1][1].result) if n.kind == "clock_low"]
    assert reminder.player == zed and reminder.due_ms > _ms() + 10_000
    queued = [rules.delivery_id(reminder.id, e["id"]) for e in (mail, hook)]
    produce(stack.bootstrap, stack.topics.moves, [(late.encode(), raw) for raw, _ in first_two])
    wait_until(lambda: all(_state(stack, d).get(b"state") == b"pending" for d in queued), what="the reminder queued")
    wait_until(lambda: _told(received, path, late, "your_move") and len(mails(box, address)) == 2, what="your_move")
    told = (len(mails(box, address)), len(hooks(received, path)))
    assert tag.encode() not in redis_text(client)  # the outbox holds endpoint ids, never an address

    erased = cli(stack, "players", "erase", zed)
    assert erased.returncode == 0 and f"{zed}: erased" in erased.stdout, erased.stderr
    assert all(_state(stack, d) == {} for d in queued)  # gone from the outbox, payload and all
    assert stack.http.get("/v1/names", params={"player": zed}).json()["names"] == {zed: ERASED_NAME}
    assert stack.http.get("/v1/notifications/endpoints", headers=zed_auth).json()["endpoints"] == []
    again = stack.http.post(
        "/v1/notifications/endpoints", json={"channel": "email", "address": address}, headers=zed_auth
    )
    assert again.status_code == 410  # an erased profile takes no new address

    # nothing more reaches zed: a new invitation, and the reminder once it would have been due
    _invite(stack, kit, zed)
    control = _invite(stack, zed, kit)
    wait_until(lambda: _told(received, f"/ok/kit-{tag}", control, "invited"), what="kit's invitation")
    wait_until(lambda: _ms() > reminder.due_ms + 2000 and _read_everything(stack), what="the reminder's time")
    assert (len(mails(box, address)), len(hooks(received, path))) == told
    assert tag.encode() not in redis_text(client)
