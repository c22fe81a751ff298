"""Your own bot through the HTTP API alone (no plylog code): it makes itself a guest identity,
joins every open match whose seat is kept for it (or, with --any, any open match), and plays a
random legal action whenever it is to move, until stopped. The same shape works for any game.

    python examples/bots/http_bot.py --gateway http://127.0.0.1:8000 --name mybot

It prints its player id first: invite it with that id (`"seats": ["<you>", "<its id>"]`).
"""

import argparse
import random
import time

import httpx


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gateway", default="http://127.0.0.1:8000")
    parser.add_argument("--name", default="httpbot")
    parser.add_argument("--any", action="store_true", help="also join open matches not kept for it")
    args = parser.parse_args()
    http = httpx.Client(base_url=args.gateway, timeout=30)
    me = http.post("/v1/players", json={"name": args.name}).raise_for_status().json()
    print(me["player"], flush=True)
    seats: dict[str, str] = {}  # match id -> my seat token
    while True:
        for match in http.get("/v1/matches", params={"status": "open"}).json()["matches"]:
            if match["match_id"] not in seats and wanted(http, match["match_id"], me["player"], args.any):
                joined = http.post(
                    f"/v1/matches/{match['match_id']}/join", headers={"Authorization": f"Bearer {me['token']}"}
                )
                if joined.status_code == 200:
                    seats[match["match_id"]] = joined.json()["token"]
        for match_id, token in list(seats.items()):
            if not play(http, match_id, token):
                del seats[match_id]  # over
        time.sleep(0.2)


def wanted(http, match_id, player, anyone):
    view = http.get(f"/v1/matches/{match_id}").json()
    invited = view.get("invited") or [None, None]
    return player in invited or (
        anyone and any(s is None and i is None for s, i in zip(view["seats"], invited, strict=False))
    )


def play(http, match_id, token):
    """One random legal action if it is to move; False once the match is over."""
    auth = {"Authorization": f"Bearer {token}"}
    answer = http.get(f"/v1/matches/{match_id}/legal-actions", headers=auth)
    if answer.status_code != 200:  # e.g. 429 (asked too often) or 503 (a long log being read): next round
        return True
    listing = answer.json()
    if listing["status"] == "over":
        return False
    if listing["actions"]:
        http.post(
            f"/v1/matches/{match_id}/actions",
            params={"wait": "true"},
            headers=auth,
            json={"action": random.choice(listing["actions"]), "expected_seq": listing["seq"]},
        )
    return True


if __name__ == "__main__":
    main()
