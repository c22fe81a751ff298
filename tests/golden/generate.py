"""Write the golden match logs: move records and the exact bytes the fold gave them.

    .venv/bin/python -m tests.golden.generate            # writes only files that do not exist
    .venv/bin/python -m tests.golden.generate --rewrite  # overwrites them: almost never right

Each `tests/golden/<game>/<scenario>.jsonl` line is one move record as the rules worker reads it
and what the fold answered:

    {"record": "<the record's text>", "result": "<result bytes>", "outcome": "<outcome bytes>"?,
     "key": "<Kafka key>"?, "partition": p?, "home": h?, "offset": o?}

`key`/`partition`/`home`/`offset` are present for records folded as read from Kafka (a placement,
as `services/common/moves_log.refold` gives); without them the record is folded as line N of a
match log file (`games.fold.replay_lines`). `tests/unit/test_golden_logs.py` refolds every file and
fails if one byte of one result or outcome differs.

The files were written once, by the code of the day they were committed, and are the promise that
old logs keep their meaning: `plylog audit` compares a refold with the results on the topic, so a
change of the bytes a recorded match folds to is a broken audit of every match in production.
Rewriting them to make the golden test pass hides exactly the change the test exists to catch:
change the code (a new rules version, an upcaster: docs/evolving.md) instead. Add a new scenario
as a new file (the generator writes only missing files); `--rewrite` is for a file the same commit
added, never for a committed one.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from games.fold import Placement, Replayer, encode
from games.match import TIMEKEEPER, MatchState
from games.playout import move_record, random_playout_records
from schemas.base import GAME_NAMES, MAX_RECORD_BYTES
from schemas.tournament import DIRECTOR

HERE = Path(__file__).parent
T0_MS = 1_795_989_600_000  # 2026-11-29T22:00:00Z
TOPIC = "plylog.moves"

# Options of the playouts per game (a default and one other set each).
PLAYOUT_OPTIONS: dict[str, list[dict[str, Any]]] = {
    "strands": [{"layout": "small-4"}, {"layout": "small-5", "placement": "exact"}],
    "mastermind": [{"pegs": 3, "colors": 6, "rounds": 2}, {"feedback": "manual", "pegs": 3, "colors": 4, "rounds": 2}],
    "mana": [{}, {"bird_blocks": False, "max_plies": 40}],
    "mind_ninja": [{"side": 4}, {"side": 3}],
}


@dataclass
class Log:
    """One golden file being written: records folded by one Replayer, as the worker would."""

    replayer: Replayer = field(default_factory=Replayer)
    lines: list[dict[str, Any]] = field(default_factory=list)
    clock_ms: int = T0_MS
    rng: random.Random = field(default_factory=lambda: random.Random(42))

    def raw(self, raw: bytes, key: str | None = None, partition: int = 0, home: int = 0) -> dict[str, Any]:
        """Fold raw bytes; with `key` as read from partition `partition` of the topic at the next offset."""
        line: dict[str, Any] = {"record": raw.decode()}
        if key is None:
            source = {"file": "golden", "line": len(self.lines) + 1}
            taken = self.replayer.feed(raw, source)
        else:
            line.update(key=key, partition=partition, home=home, offset=len(self.lines))
            source = {"partition": partition, "offset": len(self.lines)}
            taken = self.replayer.feed(raw, source, key=key, placement=Placement(TOPIC, partition, home))
        line["result"] = encode(taken.result).decode()
        if taken.outcome is not None:
            line["outcome"] = encode(taken.outcome).decode()
        self.lines.append(line)
        return taken.result

    def send(
        self, match: str, player: str, action: dict[str, Any], *, advance_ms: int = 1000, **kw: Any
    ) -> dict[str, Any]:
        self.clock_ms += advance_ms
        event_id = kw.pop("event_id", f"{match}-{len(self.lines)}")
        return self.raw(move_record(match, player, action, event_id, self.clock_ms, kw.pop("expected_seq", None)))

    def state(self, match: str) -> MatchState:
        return self.replayer.states[match]

    def move(self, match: str, seat: int | None = None, by: str | None = None, **kw: Any) -> dict[str, Any]:
        """A random legal game action of `seat` (default: the first to move), sent by its player or `by`."""
        state = self.state(match)
        seat = state.to_move()[0] if seat is None else seat
        action = state.rules.random_action(state.board, seat, self.rng)
        player = by or state.seats[seat]
        assert action is not None and player is not None
        return self.send(match, player, action, **kw)

    def play_out(self, match: str, limit: int = 3000) -> None:
        for _ in range(limit):
            if self.state(match).status == "over":
                return
            self.move(match)
        raise RuntimeError(f"{match} did not end")


def create(game: str, seats: list[str | None], options: dict[str, Any] | None = None, **extra: Any) -> dict:
    return {"type": "create", "game": game, "seats": seats, "options": options or {}, **extra}


def lifecycle(game: str) -> Log:
    """Every lifecycle record and rejection a match can meet, in one match with a Fischer clock."""
    log, m = Log(), f"{game}-life"
    opts = PLAYOUT_OPTIONS[game][0]
    log.send(m, "bob", {"type": "join"})  # unknown_match
    log.send(m, "alice", create(game, ["alice", None], opts, clock={"initial_s": 60, "increment_s": 1}))
    log.send(m, "alice", create(game, ["alice", "bob"], opts))  # match_exists
    log.send(m, "alice", {"type": "nope"})  # malformed (not an action of the game)
    log.move(m, 0)  # illegal: the match has not started
    log.send(m, "alice", {"type": "join"})  # already_seated
    log.send(m, "bob", {"type": "resign"})  # not_seated
    log.send(m, "alice", {"type": "resign"})  # illegal: not started
    log.send(m, "alice", {"type": "claim_timeout"})  # not_timed_out: not started
    log.send(m, "alice", {"type": "vacation", "days": 1})  # illegal: not started
    log.send(m, "alice", {"type": "join", "extra": 1})  # malformed
    log.send(m, "bob", {"type": "join"}, expected_seq=5)  # stale
    log.send(m, "bob", {"type": "join"}, expected_seq=1)  # starts the match
    log.send(m, "carol", {"type": "join"})  # illegal: full
    log.send(m, "carol", {"type": "resign"})  # not_seated
    log.send(m, "alice", {"type": "adjudicate", "winner": 0, "reason": "forfeit"})  # forbidden
    log.send(m, "alice", {"type": "vacation", "days": 1})  # illegal: no correspondence clock
    state = log.state(m)
    waiting = [seat for seat in (0, 1) if seat not in state.to_move()]
    if waiting:
        log.move(m, by=state.seats[waiting[0]])  # not_your_turn
    first = log.move(m, event_id="first-move")
    log.move(m, event_id="first-move")  # a retry of the first move: duplicate if by the same player
    log.send(m, "alice", {"type": "abort"})  # illegal: a move was made
    log.send(m, TIMEKEEPER, {"type": "claim_timeout"})  # not_timed_out
    log.send(m, TIMEKEEPER, {"type": "claim_timeout"}, advance_ms=120_000)  # timeout
    log.send(m, "alice", {"type": "resign"})  # match_over
    log.send(m, first["player"], {"type": "join"}, event_id="first-move")  # duplicate: answered as the first
    return log


def endings(game: str) -> Log:
    """Interleaved matches ending every way the lifecycle ends them, and the create's options."""
    log = Log()
    opts = PLAYOUT_OPTIONS[game][0]
    log.send("abort", "alice", create(game, ["alice", "bob"], opts))
    log.send("abort", "bob", {"type": "abort"})
    log.send("resign", "alice", create(game, ["alice", "bob"], opts))
    log.send("unrated", "alice", create(game, ["alice", "bob"], opts, rated=False))
    log.move("resign")
    log.send("resign", "alice", {"type": "resign"})
    log.send("invited", "alice", create(game, ["alice", None], opts, invited=[None, "carol"]))
    log.send("invited", "dave", {"type": "join"})  # illegal: reserved
    log.send("invited", "carol", {"type": "join"})
    log.send("bad-invite", "alice", create(game, ["alice", None], opts, invited=["bob", None]))  # illegal
    log.send("hot-seat", "alice", create(game, ["alice", "alice"], opts))
    log.send("cup", DIRECTOR, create(game, ["alice", "bob"], opts))
    log.send("cup", "alice", {"type": "adjudicate", "winner": 0, "reason": "forfeit"})  # forbidden
    log.send("cup", DIRECTOR, {"type": "adjudicate", "winner": 1, "reason": "withdrawal"})
    corr = {"kind": "correspondence", "days_per_move": 1, "vacation_days": 3}
    log.send("post", "alice", create(game, ["alice", "bob"], opts, clock=corr))
    log.send("post", "alice", {"type": "vacation", "days": 5})  # illegal: more than the allowance
    log.send("post", "alice", {"type": "vacation", "days": 2})
    log.send("post", "alice", {"type": "end_vacation"})
    log.send("post", "bob", {"type": "end_vacation"})  # illegal: not on vacation
    log.send("post", TIMEKEEPER, {"type": "claim_timeout"}, advance_ms=3 * 86_400_000)
    log.send("bad-create", "alice", create(game, ["alice", "bob"], {"nope": 1}))  # malformed options
    log.send("bad-clock", "alice", create(game, ["alice", "bob"], opts, clock={"initial_s": -1}))
    log.play_out("unrated")
    log.play_out("hot-seat")
    log.play_out("invited")
    return log


def playout(game: str, options: dict[str, Any], seed: int) -> Log:
    log = Log()
    for raw, _ in random_playout_records(game, options, seed, f"{game}-{seed}", start_ms=T0_MS):
        log.raw(raw)
    return log


def unreadable() -> Log:
    """Records the fold cannot read, as the worker meets them on a topic (key, partition)."""
    log = Log()
    ok = move_record("m1", "alice", create("strands", ["alice", "bob"]), "c1", T0_MS)
    log.raw(ok, key="m1", partition=1, home=1)
    log.raw(b"not json", key="m1", partition=1, home=1)
    log.raw(b"[1, 2]", key="m1", partition=1, home=1)
    log.raw(b"", key="m1", partition=1, home=1)
    log.raw(b'{"event_id": "e1", "match_id": "m1", "player": "bob", "at": "x"}', key="m1", partition=1, home=1)
    log.raw(move_record("m1", "bob", {"type": "join"}, "j1", T0_MS + 1000), key="m2", partition=1, home=1)
    log.raw(move_record("m1", "bob", {"type": "join"}, "j2", T0_MS + 2000), key="m1", partition=0, home=1)
    log.raw(move_record("m1", "bob", {"type": "join"}, "j3", T0_MS + 3000), key="", partition=1, home=1)
    padding = "x" * MAX_RECORD_BYTES
    big = move_record("m1", "bob", {"type": "join", "pad": padding}, "j4", T0_MS + 4000)
    log.raw(big, key="m1", partition=1, home=1)
    log.raw(move_record("m1", "bob", {"type": "join"}, "j5", T0_MS + 5000), key="m1", partition=1, home=1)
    log.raw(b"\t", key=None)
    return log


TINY = {"layout": {"side": 2, "rows": ["22", "212", "22"]}}  # a centre 1 and six 2s


def rules_versions() -> Log:
    """Creates that state their rules (added with rules versions): strands/1 and strands/2 matches with
    their receipt chains (accepted, rejected and duplicate results), and rules that do not exist."""
    log = Log()
    for match, rules in (("v1", "strands/1"), ("v2", "strands/2")):
        log.send(match, "alice", create("strands", ["alice", "bob"], TINY, rules=rules))
        log.send(match, "alice", {"type": "place", "cells": [[1, 0]]}, event_id=f"{match}-open")
        log.send(match, "alice", {"type": "place", "cells": [[1, 0]]}, event_id=f"{match}-open")  # duplicate
        log.send(match, "bob", {"type": "place", "cells": [[0, -1]]})  # v1 accepted, v2 illegal
    log.send("v2", "bob", {"type": "place", "cells": [[0, -1], [-1, 1]]})
    log.play_out("v1")
    log.play_out("v2")
    log.send("v3", "alice", create("strands", ["alice", "bob"], TINY, rules="strands/9"))  # unknown_rules
    log.send("v4", "alice", create("strands", ["alice", "bob"], TINY, rules="mana/1"))  # unknown_rules
    log.send("v5", "alice", create("strands", ["alice", "bob"], TINY, rules="strands"))  # malformed
    log.send("v6", "alice", create("mana", ["alice", "bob"], {}, rules="mana/1"))
    log.send("v6", "bob", {"type": "abort"})
    return log


def scenarios() -> dict[str, Callable[[], Log]]:
    out: dict[str, Callable[[], Log]] = {
        "any/unreadable.jsonl": unreadable,
        "strands/rules-versions.jsonl": rules_versions,
    }
    for game in GAME_NAMES:
        out[f"{game}/lifecycle.jsonl"] = lambda game=game: lifecycle(game)
        out[f"{game}/endings.jsonl"] = lambda game=game: endings(game)
        for n, options in enumerate(PLAYOUT_OPTIONS[game]):
            out[f"{game}/playout-{n}.jsonl"] = lambda game=game, options=options, n=n: playout(game, options, n + 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rewrite", action="store_true", help="overwrite existing files (read the docstring first)")
    args = parser.parse_args(argv)
    for name, make in scenarios().items():
        path = HERE / name
        if path.exists() and not args.rewrite:
            print(f"kept {name} (exists; golden logs are never regenerated, see --help)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in make().lines))
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
