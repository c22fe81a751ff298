"""An attacker against a running gateway (the whole stack): seat tokens of other people's matches,
dodging the timekeeper, and acting for, or handing rated losses to, other players. Each attack
is refused, and the matches it aimed at go on as their players want."""

from __future__ import annotations

import base64
import time

import pytest

from .gateway_stack import auth, operator

pytestmark = pytest.mark.integration
STRANDS = {"layout": "small-4"}


def guest(stack, name: str) -> tuple[str, str]:
    answer = stack.http.post("/v1/players", json={"name": name})
    assert answer.status_code == 201, answer.text
    return answer.json()["player"], answer.json()["token"]


def wait_for(stack, match_id: str, condition, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        view = stack.http.get(f"/v1/matches/{match_id}").json()
        if condition(view) or time.monotonic() > deadline:
            return view
        time.sleep(0.1)


def a_match_of(stack, first: tuple[str, str], second: tuple[str, str], game="strands", options=STRANDS, **extra):
    """`first` creates a match against `second`, who joins the seat reserved for them."""
    created = stack.http.post(
        "/v1/matches",
        json={"game": game, "seats": [first[0], second[0]], "options": options, **extra},
        headers=auth(first[1]),
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["seats"] == [first[0], None] and body["invited"] == [None, second[0]] and body["tokens"][1] is None
    joined = stack.http.post(f"/v1/matches/{body['match_id']}/join", headers=auth(second[1]))
    assert joined.status_code == 200, joined.text
    return body["match_id"], [body["tokens"][0], joined.json()["token"]], joined.json()["view"]


def test_a_create_naming_a_running_match_never_hands_out_its_seat_tokens(stack):
    ann, ben, mallory = guest(stack, "ann"), guest(stack, "ben"), guest(stack, "mallory")
    match_id, tokens, _ = a_match_of(stack, ann, ben)
    for timeout in ("0.000001", "10"):  # answered pending, and answered after the rules refused it
        answer = stack.http.post(
            f"/v1/matches?timeout={timeout}",
            headers=auth(mallory[1]),
            json={"game": "strands", "seats": [mallory[0], None], "options": STRANDS, "match_id": match_id},
        )
        assert answer.status_code in (202, 409), answer.text
        assert not any(answer.json().get("tokens") or [])
        assert f"{match_id}.0." not in answer.text and f"{match_id}.1." not in answer.text
    refused = stack.http.get(f"/v1/matches/{match_id}/tokens", headers=auth(mallory[1]))
    assert refused.status_code == 403
    signature = tokens[0].split(".")[2]
    for forged in (f"{match_id}.1.{signature}", f"{match_id}.0.{signature[:-3]}é€x", mallory[1]):
        answer = stack.http.post(
            f"/v1/matches/{match_id}/actions?wait=true",
            json={"action": {"type": "resign"}},
            headers={"Authorization": f"Bearer {forged}".encode()},
        )  # UTF-8, as sent
        assert answer.status_code in (401, 403), answer.text
    assert stack.http.get(f"/v1/matches/{match_id}").json()["status"] == "active"
    mine = stack.http.get(f"/v1/matches/{match_id}/tokens", headers=auth(ann[1])).json()["tokens"]
    assert mine == [tokens[0], None]


def test_a_player_cannot_use_up_the_timekeepers_claim_id(stack):
    """Mind Ninja: the inventor stays to move after choosing the pattern, so with no increment its
    deadline, and so the timekeeper's claim id `timeout-<deadline>`, stay the same. Acting with that
    id must not make the claim a duplicate: the match still ends by timeout."""
    ann, ben = guest(stack, "ann"), guest(stack, "ben")
    match_id, tokens, _view = a_match_of(
        stack, ann, ben, "mind_ninja", {"side": 3}, clock={"initial_s": 4, "increment_s": 0}
    )
    passed = stack.http.post(
        f"/v1/matches/{match_id}/actions?wait=true", headers=auth(tokens[0]), json={"action": {"type": "pass"}}
    ).json()
    clock = passed["view"]["clock"]
    claim_id = f"timeout-{clock['since_ms'] + clock['remaining_ms'][1]}"
    chosen = stack.http.post(
        f"/v1/matches/{match_id}/actions?wait=true",
        headers=auth(tokens[1]),
        json={
            "action": {"type": "choose_pattern", "pattern": {"id": "five_in_a_row", "params": {"n": 3}}},
            "event_id": claim_id,
        },
    ).json()
    assert chosen["status"] == "accepted" and chosen["view"]["to_move"] == [1], chosen
    assert chosen["view"]["clock"]["since_ms"] + chosen["view"]["clock"]["remaining_ms"][1] == int(claim_id[8:])
    over = wait_for(stack, match_id, lambda v: v["status"] == "over", timeout=20)
    assert over["outcome"]["reason"] == "timeout" and over["outcome"]["winner"] == 0, over


def test_nobody_plays_or_loses_a_rated_match_for_someone_else(stack):
    ann, ben, mallory = guest(stack, "ann"), guest(stack, "ben"), guest(stack, "mallory")
    # naming two other players seats nobody: both seats wait for their own players
    both = stack.http.post(
        "/v1/matches", headers=auth(mallory[1]), json={"game": "strands", "seats": [ann[0], ben[0]], "options": STRANDS}
    ).json()
    assert both["seats"] == [None, None] and both["tokens"] == [None, None]
    assert stack.http.get(f"/v1/matches/{both['match_id']}/tokens", headers=auth(mallory[1])).status_code == 403
    taken = stack.http.post(f"/v1/matches/{both['match_id']}/join", headers=auth(mallory[1]))
    assert taken.status_code == 409 and "reserved" in taken.json()["error"]["message"]
    # a reserved seat is only the named player's; until they join nothing is rated
    duel = stack.http.post(
        "/v1/matches",
        headers=auth(mallory[1]),
        json={"game": "strands", "seats": [mallory[0], ann[0]], "options": STRANDS},
    ).json()
    assert duel["tokens"][1] is None
    resign = stack.http.post(
        f"/v1/matches/{duel['match_id']}/actions?wait=true",
        headers=auth(duel["tokens"][0]),
        json={"action": {"type": "resign"}},
    ).json()
    assert resign["status"] == "rejected" and resign["reason"]["code"] == "illegal"
    # nobody can name themselves someone else
    for body in ({"game": "strands", "seats": [ann[0], None], "creator": ann[0]},):
        assert stack.http.post("/v1/matches", headers=auth(mallory[1]), json=body).status_code == 403
    assert (
        stack.http.post(
            f"/v1/matches/{duel['match_id']}/join", headers=auth(mallory[1]), json={"player": ann[0]}
        ).status_code
        == 403
    )
    fake = "g1." + base64.urlsafe_b64encode(ann[0].encode()).rstrip(b"=").decode() + "." + mallory[1].split(".")[2]
    assert (
        stack.http.post(
            "/v1/matches", headers=auth(fake), json={"game": "strands", "seats": [ann[0], None]}
        ).status_code
        == 401
    )
    assert stack.http.post("/v1/matches", json={"game": "strands", "seats": ["ann", "ben"]}).status_code == 401
    # the rate limit is the credential's player's: spending mallory's leaves ann's bucket untouched
    assert not stack.redis().exists(stack.keys.ratelimit(ann[0]))
    played = a_match_of(stack, ann, ben)
    assert stack.redis().exists(stack.keys.ratelimit(ann[0]))
    assert played[2]["status"] == "active"


def test_only_the_creator_operator_ends_a_match_it_created_and_nobody_takes_its_id(stack):
    """A tournament's match (created by plylog-tournaments, its players seated): neither of its players
    nor anyone else may `adjudicate` it through the gateway (refused at the door, nothing written), and
    no guest may call themselves `plylog-tournaments`."""
    taken = stack.http.post("/v1/players", json={"name": "plylog-tournaments"})
    assert taken.status_code == 422, taken.text
    created = stack.http.post(
        "/v1/matches",
        headers=operator(),
        json={"game": "strands", "seats": ["kim", "lou"], "options": STRANDS, "creator": "plylog-tournaments"},
    ).json()
    match_id = created["match_id"]
    for seat, token in enumerate(created["tokens"]):
        answer = stack.http.post(
            f"/v1/matches/{match_id}/actions?wait=true",
            headers=auth(token),
            json={"action": {"type": "adjudicate", "winner": seat, "reason": "forfeit"}},
        )
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "forbidden", answer.text
        assert "plylog-tournaments" in answer.json()["error"]["message"]
    match = stack.http.get(f"/v1/matches/{match_id}").json()
    assert match["status"] == "active" and match["seq"] == 1, match


def test_a_guest_creates_an_unrated_match(stack):
    ann, ben = guest(stack, "ann"), guest(stack, "ben")
    match_id, tokens, view = a_match_of(stack, ann, ben, rated=False)
    assert view["rated"] is False
    answer = stack.http.post(
        f"/v1/matches/{match_id}/actions?wait=true", headers=auth(tokens[0]), json={"action": {"type": "resign"}}
    ).json()
    assert answer["status"] == "accepted" and answer["view"]["rated"] is False
    _, _, rated_view = a_match_of(stack, ann, ben)
    assert "rated" not in rated_view


def test_the_operator_vouches_for_named_players_and_gets_their_tokens(stack):
    created = stack.http.post(
        "/v1/matches", headers=operator(), json={"game": "strands", "seats": ["ivy", "jon"], "options": STRANDS}
    ).json()
    assert created["seats"] == ["ivy", "jon"] and all(created["tokens"]) and created["view"]["status"] == "active"
    again = stack.http.get(f"/v1/matches/{created['match_id']}/tokens", headers=operator()).json()
    assert again["tokens"] == created["tokens"]


def test_the_cli_logs_in_invites_and_joins_as_its_own_players(stack, tmp_path):
    """`plylog login`, `new --seat me --seat <id>` (the seat is reserved), `join`, `tokens`,
    `whoami`, `act` with the login's seat token, each with a home of its own (another person on another machine)."""
    import os
    import subprocess
    import sys

    def cli(home, *args):
        env = {**os.environ, "PLYLOG_GATEWAY_URL": stack.url, "PLYLOG_HOME": str(home)}
        env.pop("PLYLOG_OPERATOR_KEY", None)
        done = subprocess.run(
            [sys.executable, "-m", "services.cli.main", *args], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    ann, ben = tmp_path / "ann", tmp_path / "ben"
    assert "you are g~" in cli(ann, "login", "ann")
    ben_id = cli(ben, "login", "ben").split()[2]
    created = cli(ann, "new", "strands", "--option", "layout=small-4", "--seat", "me", "--seat", ben_id, "--json")
    import orjson

    answer = orjson.loads(created)
    assert answer["invited"] == [None, ben_id] and answer["tokens"][1] is None
    joined = cli(ben, "join", answer["match_id"])
    assert f"{ben_id} holds seat 1" in joined
    assert f"seat 1 ({ben_id}): {answer['match_id']}.1." in cli(ben, "tokens", answer["match_id"])
    assert cli(ann, "whoami").startswith("g~")
    resigned = orjson.loads(cli(ann, "act", answer["match_id"], '{"type": "resign"}'))  # no --token: the login's
    assert resigned["status"] == "accepted" and resigned["player"] == answer["seats"][0], resigned
