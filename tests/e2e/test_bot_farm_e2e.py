"""A bot farm against the whole stack (gateway, rules worker, projector, bot service): the gateway
caps a player's unfinished matches against bots (PLYLOG_BOT_MATCHES_PER_PLAYER), and while 36
matches against the strongest bot keep the bot service thinking, a bystander's move against
`bot:random` is still answered in its normal time (docs/security/bots.md)."""

from __future__ import annotations

import random
import statistics
import threading
import time

import httpx
import pytest

from .gateway_stack import auth, operator, running_stack

pytestmark = pytest.mark.integration
CAP = 4  # PLYLOG_BOT_MATCHES_PER_PLAYER on this stack (the default)
FARM = 36  # matches against bot:mcts-3, as in the finding: CAP each for FARM / CAP identities
STRONGEST = "bot:mcts-3"
FARM_GAME, FARM_OPTIONS = "strands", {}  # the default board: mcts-3's slowest decisions
BYSTANDER_OPTIONS: dict = {}  # the default board
SAMPLES = 7
BOUND_S = 5.0  # a bystander's move against bot:random, answered (0.3 s on a quiet stack)


@pytest.fixture(scope="module")
def stack(kafka_bootstrap, redis_url, tmp_path_factory):
    with running_stack(
        kafka_bootstrap,
        redis_url,
        tmp_path_factory.mktemp("farm"),
        "farm",
        3,
        bots=True,
        PLYLOG_BOT_MATCHES_PER_PLAYER=str(CAP),
        PLYLOG_RATE_PER_S="1000",
        PLYLOG_RATE_BURST="1000",
        PLYLOG_ADDRESS_RATE_PER_S="1000",
        PLYLOG_ADDRESS_RATE_BURST="1000",
    ) as running:
        wait_for_bots(running)
        yield running


def wait_for_bots(stack, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not stack.http.get("/v1/bots?game=strands").json()["bots"]["strands"]:
        assert time.monotonic() < deadline, f"no bot announced\n{stack.logs()}"
        time.sleep(0.2)


def guest(stack, name: str) -> tuple[str, str]:
    answer = stack.http.post("/v1/players", json={"name": name})
    assert answer.status_code == 201, answer.text
    return answer.json()["player"], answer.json()["token"]


def create(stack, credential: str, seats: list, options=None, headers=None, **extra):
    return stack.http.post(
        "/v1/matches",
        headers=headers or auth(credential),
        json={"game": "strands", "seats": seats, "options": options or {"layout": "small-4"}, **extra},
    )


def view_when(stack, match_id: str, condition, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        view = stack.http.get(f"/v1/matches/{match_id}").json()
        if condition(view):
            return view
        assert time.monotonic() < deadline, f"{match_id} stuck at seq {view.get('seq')}\n{stack.logs()}"
        time.sleep(0.02)


def refused_for_the_cap(answer) -> None:
    assert answer.status_code == 429, answer.text
    error = answer.json()["error"]
    assert error["code"] == "bot_match_limit", error
    assert "PLYLOG_BOT_MATCHES_PER_PLAYER" in error["message"] and str(CAP) in error["message"], error


def test_the_cap_refuses_one_bot_match_too_many_and_admits_another_once_one_ends(stack):
    me, credential = guest(stack, "capped")
    made = [create(stack, credential, [me, "bot:random"]) for _ in range(CAP)]
    assert [m.status_code for m in made] == [201] * CAP, [m.text for m in made]
    refused_for_the_cap(create(stack, credential, [me, "bot:random"]))
    refused_for_the_cap(create(stack, credential, ["bot:random", "bot:mcts-1"]))  # bots only: the creator's
    _host, host_credential = guest(stack, "host")
    waiting = create(stack, host_credential, [None, "bot:random"])
    assert waiting.status_code == 201, waiting.text
    waiting_id = waiting.json()["match_id"]
    refused_for_the_cap(stack.http.post(f"/v1/matches/{waiting_id}/join", headers=auth(credential)))
    refused_for_the_cap(create(stack, "", [me, "bot:random"], headers=operator(), creator=me))
    # a match against a person is no match against a bot
    friend, _ = guest(stack, "friend")
    assert create(stack, credential, [me, friend]).status_code == 201

    first = made[0].json()
    resigned = stack.http.post(
        f"/v1/matches/{first['match_id']}/actions?wait=true",
        headers=auth(first["tokens"][0]),
        json={"action": {"type": "resign"}},
    )
    assert resigned.json()["status"] == "accepted", resigned.text
    view_when(stack, first["match_id"], lambda v: v["status"] == "over")
    joined = stack.http.post(f"/v1/matches/{waiting_id}/join", headers=auth(credential))
    assert joined.status_code == 200, joined.text
    refused_for_the_cap(create(stack, credential, [me, "bot:random"]))


class Farmer:
    """Identities that each make matches against the strongest bot until refused, FARM in all
    (the bot moves first), and play their own turns at once (DRIVERS threads) so that the bot
    service always has turns to think about."""

    DRIVERS = 4

    def __init__(self, stack):
        self.stack, self.matches, self.moves = stack, [], 0
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._play, args=(n,), daemon=True) for n in range(self.DRIVERS)]
        self.errors: list[BaseException] = []

    def farm(self) -> None:
        started = time.monotonic()
        while len(self.matches) < FARM:
            player, credential = guest(self.stack, "farmer")
            while len(self.matches) < FARM:
                answer = create(self.stack, credential, [STRONGEST, player], FARM_OPTIONS)
                if answer.status_code == 429:
                    break
                assert answer.status_code == 201, answer.text
                self.matches.append((answer.json()["match_id"], answer.json()["tokens"][1]))
        self.made_in_s = time.monotonic() - started
        for thread in self.threads:
            thread.start()

    def _play(self, driver: int) -> None:
        rng = random.Random(driver)
        mine = self.matches[driver :: self.DRIVERS]
        try:
            with httpx.Client(base_url=self.stack.url, timeout=30) as http:
                while not self.stop.is_set():
                    for match_id, token in mine:
                        view = http.get(f"/v1/matches/{match_id}").json()
                        if self.stop.is_set() or view["status"] != "active" or 1 not in view["to_move"]:
                            continue
                        listing = http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth(token)).json()
                        if listing["actions"]:
                            action = rng.choice(listing["actions"])
                            body = {"action": action, "expected_seq": listing["seq"]}
                            http.post(f"/v1/matches/{match_id}/actions", headers=auth(token), json=body)
                            self.moves += 1
                    time.sleep(0.05)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.errors.append(error)

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)


class Bystander:
    """A player with a match against bot:random (a new one whenever theirs is over)."""

    def __init__(self, stack):
        self.stack, self.rng = stack, random.Random(3)
        self.player, self.credential = guest(stack, "bystander")
        self.match_id, self.token = self._new_match()

    def _new_match(self) -> tuple[str, str]:
        created = create(self.stack, self.credential, [self.player, "bot:random"], BYSTANDER_OPTIONS)
        assert created.status_code == 201, created.text
        return created.json()["match_id"], created.json()["tokens"][0]

    def move_answered_in(self) -> float:
        """Seconds from sending a move until the bot's answer is in the projection."""
        while True:
            view = view_when(self.stack, self.match_id, lambda v: v["status"] == "over" or 0 in v["to_move"])
            if view["status"] == "over":
                self.match_id, self.token = self._new_match()
                continue
            actions = self.stack.http.get(
                f"/v1/matches/{self.match_id}/legal-actions", headers=auth(self.token)
            ).json()["actions"]
            started = time.monotonic()
            sent = self.stack.http.post(
                f"/v1/matches/{self.match_id}/actions?wait=true",
                headers=auth(self.token),
                json={"action": self.rng.choice(actions), "expected_seq": view["seq"]},
            ).json()
            assert sent["status"] == "accepted", sent
            if sent["view"]["status"] == "over":  # the bystander's move ended it: no answer to wait for
                continue
            view_when(self.stack, self.match_id, lambda v: v["seq"] > sent["seq"], timeout=120)
            return time.monotonic() - started


def test_a_bystanders_move_against_the_random_bot_is_answered_in_its_normal_time_during_a_bot_farm(stack):
    bystander = Bystander(stack)
    quiet = [bystander.move_answered_in() for _ in range(SAMPLES)]
    farmer = Farmer(stack)
    farmer.farm()
    try:
        deadline = time.monotonic() + 180
        while farmer.moves < FARM:  # every farm match has had a bot move: the farm is in full swing
            assert time.monotonic() < deadline and not farmer.errors, f"the farm is stuck\n{stack.logs()}"
            time.sleep(0.2)
        before = farmer.moves
        busy = []
        for _ in range(SAMPLES):
            busy.append(bystander.move_answered_in())
            time.sleep(0.5)
        during = farmer.moves - before
    finally:
        farmer.end()
    assert not farmer.errors, farmer.errors
    figures = (
        f"farm: {len(farmer.matches)} matches against {STRONGEST} made in {farmer.made_in_s:.1f} s, "
        f"{before} farm moves before measuring, {during} while measuring; bystander's move answered in (s) quiet "
        f"{[round(q, 2) for q in quiet]}, during the farm {[round(b, 2) for b in busy]}; median ratio "
        f"{statistics.median(busy) / statistics.median(quiet):.1f}x"
    )
    print(figures)
    assert statistics.median(busy) <= BOUND_S, figures
    assert during > 0, f"the farm's own matches stood still: {figures}"
