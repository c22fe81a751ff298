"""Your own bot on the seat socket (no plylog code): like http_bot.py it makes itself a guest
identity and joins every open match whose seat is kept for it (or, with --any, any open match),
then plays each one over a WebSocket (GET /v1/matches/{id}/play): the socket says when it is to
move, hands it the legal actions and answers its moves, so nothing is polled. A random legal
action each time; the same shape works for any game.

    python examples/bots/ws_bot.py --gateway http://127.0.0.1:8000 --name mybot

It prints its player id first: invite it with that id (`"seats": ["<you>", "<its id>"]`).
"""

import argparse
import json
import random
import threading
import time

import httpx
from websockets.sync.client import connect


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gateway", default="http://127.0.0.1:8000")
    parser.add_argument("--name", default="wsbot")
    parser.add_argument("--any", action="store_true", help="also join open matches not kept for it")
    args = parser.parse_args()
    http = httpx.Client(base_url=args.gateway, timeout=30)
    me = http.post("/v1/players", json={"name": args.name}).raise_for_status().json()
    print(me["player"], flush=True)
    joined: set[str] = set()
    while True:  # the lobby has no stream: look for seats kept for it now and then
        for match in http.get("/v1/matches", params={"status": "open"}).json()["matches"]:
            if match["match_id"] not in joined and wanted(http, match["match_id"], me["player"], args.any):
                answer = http.post(
                    f"/v1/matches/{match['match_id']}/join", headers={"Authorization": f"Bearer {me['token']}"}
                )
                if answer.status_code == 200:
                    joined.add(match["match_id"])
                    seat = answer.json()
                    threading.Thread(
                        target=play, args=(args.gateway, seat["match_id"], seat["token"]), daemon=True
                    ).start()
        time.sleep(0.5)


def wanted(http, match_id, player, anyone):
    view = http.get(f"/v1/matches/{match_id}").json()
    invited = view.get("invited") or [None, None]
    return player in invited or (
        anyone and any(s is None and i is None for s, i in zip(view["seats"], invited, strict=False))
    )


def play(gateway, match_id, token):
    """One match over its seat socket, until it is over."""
    url = gateway.replace("http", "ws", 1) + f"/v1/matches/{match_id}/play"
    with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as socket:
        seat, asked = None, None  # my seat (from hello); the seq whose legal actions I asked for
        for text in socket:
            message = json.loads(text)
            kind, view = message["type"], message.get("view")
            if kind == "hello":
                seat = message["seat"]
            if kind == "result" and message.get("status") == "rejected":
                asked = None  # my move was refused (e.g. stale): ask again
            if kind == "error":
                print(f"{match_id}: {message['code']}: {message['message']}", flush=True)
            if kind == "legal_actions" and message["actions"]:  # a stale listing: the move is refused, asked again
                socket.send(json.dumps({"action": random.choice(message["actions"]), "expected_seq": message["seq"]}))
            if view is None:  # a legal_actions answer, an error, a pending answer, or a result read back from the log
                continue
            if view["status"] == "over":
                return
            if seat in view["to_move"] and view["seq"] != asked:
                asked = view["seq"]
                socket.send(json.dumps({"type": "legal_actions"}))


if __name__ == "__main__":
    main()
