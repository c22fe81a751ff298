"""Your own bot through the topics alone: a Mastermind player that reads plylog.results and
produces its moves to plylog.moves. No plylog code: only the documented records (docs/contract.md,
schemas/json/, schemas/asyncapi.yaml). It plays every match where `--player`
holds a seat: codebreaker with the first code consistent with the rows so far, codemaker with a
random code (feedback "auto" only).

    python examples/bots/topic_bot.py --player my-bot --bootstrap 127.0.0.1:9092

Match creation is not its business: a platform seats it (e.g. the operator creates a match with
`"seats": ["ann", "my-bot"]`). Producing to plylog.moves needs a trusted producer's access.
"""

import argparse
import itertools
import json
import secrets
from datetime import UTC, datetime

from kafka import KafkaConsumer, KafkaProducer  # its default partitioner is Java's murmur2: the right one


def feedback(secret, guess):
    black = sum(s == g for s, g in zip(secret, guess, strict=False))
    return black, sum(min(secret.count(c), guess.count(c)) for c in set(guess)) - black


def codes(options):
    for code in itertools.product(range(options["colors"]), repeat=options["pegs"]):
        distinct = len(set(code))
        if (options["repeats"] or distinct == len(code)) and distinct <= (options["max_distinct"] or distinct):
            yield list(code)


def decide(view):
    options, rows = view["options"], view["rows"]
    if view["phase"] == "guess":
        tried = [([int(c) for c in code], (black, white)) for code, black, white in rows if black is not None]
        return {
            "type": "guess",
            "code": next(c for c in codes(options) if all(feedback(c, g) == fb for g, fb in tried)),
        }
    if view["phase"] == "code" and options["feedback"] == "auto":
        return {"type": "set_code", "code": secrets.choice(list(codes(options))), "salt": secrets.token_hex(16)}
    return None  # manual feedback: not this bot's game


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--player", required=True, help="the player id it plays as")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic-prefix", default="plylog.")
    args = parser.parse_args()
    results = KafkaConsumer(
        args.topic_prefix + "results",
        bootstrap_servers=args.bootstrap,
        group_id=f"example-bot-{args.player}",
        auto_offset_reset="earliest",
    )
    moves = KafkaProducer(bootstrap_servers=args.bootstrap, acks="all")
    print(f"playing as {args.player}", flush=True)
    for message in results:
        view = (json.loads(message.value) or {}).get("view") or {}
        if view.get("game") != "mastermind" or view.get("status") != "active":
            continue
        mine = [seat for seat in view["to_move"] if view["seats"][seat] == args.player]
        action = decide(view) if mine else None
        if action is None:
            continue
        record = {
            "v": 1,
            "event_id": f"{args.player}:{view['seq']}",
            "match_id": view["match_id"],
            "player": args.player,
            "expected_seq": view["seq"],
            "action": action,
            "at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        moves.send(args.topic_prefix + "moves", key=view["match_id"].encode(), value=json.dumps(record).encode())
        moves.flush()


if __name__ == "__main__":
    main()
