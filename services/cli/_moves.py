"""Short move syntax for terminal play (`plylog play`): a line of text -> an action dict.

Every game also takes raw JSON (`{"type": ...}`) and the lifecycle words `resign`, `abort`,
`claim` (claim_timeout), `vacation DAYS` and `back` (end_vacation; correspondence clocks).
Raises ValueError with a message saying what was expected.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import orjson

SYNTAX = {
    "strands": "cells as q,r separated by spaces, e.g. `1,0 0,-1`",
    "mana": "`b1` place the Daimyo · `e1 d3 a3` move e1 to d3, bird to a3 (omit the bird when none is due) · "
    "`drop d3 a3` drop a Ronin on d3, bird to a3",
    "mastermind": "`guess 0123` · `set 0123` (auto feedback; a random salt is made) · `commit 0123` (manual: "
    "prints the salt to keep) · `feedback 2 1` (black white) · `reveal 0123 SALT`",
    "mind_ninja": "`bid 3` · `pass` · `pattern ID` or `pattern {json}` · `setup 0,0:red 1,-1:blue` · `end` · "
    "`role builder|blocker` · `0,1 red` place a stone · `decline` (a free move)",
}
COMMON = (
    "also: `resign`, `abort`, `claim` (the opponent's clock ran out), `vacation DAYS` and `back` "
    "(correspondence clocks), or an action as JSON"
)
LIFECYCLE = {
    "resign": "resign",
    "abort": "abort",
    "claim": "claim_timeout",
    "claim_timeout": "claim_timeout",
    "back": "end_vacation",
    "end_vacation": "end_vacation",
}


def help_for(game: str) -> str:
    return f"{SYNTAX.get(game, 'an action as JSON')}; {COMMON}"


def parse(game: str, line: str, view: dict[str, Any] | None = None) -> dict[str, Any]:
    """The action a line means in `game`; `view` (the public view) helps where the syntax needs it."""
    line = line.strip()
    if not line:
        raise ValueError("empty input")
    if line.startswith("{"):
        try:
            action = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise ValueError(f"not valid JSON: {error}") from None
        if not isinstance(action, dict) or not isinstance(action.get("type"), str):
            raise ValueError('a JSON action is an object with a "type", e.g. {"type": "resign"}')
        return action
    words = line.split()
    if words[0].lower() in LIFECYCLE and len(words) == 1:
        return {"type": LIFECYCLE[words[0].lower()]}
    if words[0].lower() == "vacation":
        if len(words) != 2:
            raise ValueError("write `vacation DAYS`, e.g. `vacation 3`")
        return {"type": "vacation", "days": _int(words[1], "vacation days")}
    parser = PARSERS.get(game)
    if parser is None:
        raise ValueError(f"no short syntax for {game}; type the action as JSON")
    return parser(words, view or {})


def _cell(text: str) -> list[int]:
    try:
        q, r = text.split(",")
        return [int(q), int(r)]
    except ValueError:
        raise ValueError(f"{text!r} is not a cell; write q,r (e.g. 1,-2)") from None


def _code(text: str) -> list[int]:
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a code; write colour digits, e.g. 0123")
    return [int(c) for c in text]


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what} must be a whole number, not {text!r}") from None


def _strands(words: list[str], view: dict) -> dict[str, Any]:
    cells = words[1:] if words[0].lower() == "place" else words
    return {"type": "place", "cells": [_cell(w) for w in cells]}


def _mana(words: list[str], view: dict) -> dict[str, Any]:
    words = [w.lower() for w in words]
    if words[0] == "drop":
        if len(words) not in (2, 3):
            raise ValueError("drop: `drop TO [BIRD]`, e.g. drop d3 a3")
        return {"type": "drop", "to": words[1], **({"bird": words[2]} if len(words) == 3 else {})}
    if words[0] in ("daimyo", "place") and len(words) == 2:
        return {"type": "place_daimyo", "square": words[1]}
    if len(words) == 1:
        return {"type": "place_daimyo", "square": words[0]}
    if len(words) in (2, 3):
        return {"type": "move", "from": words[0], "to": words[1], **({"bird": words[2]} if len(words) == 3 else {})}
    raise ValueError("mana: `b1` (Daimyo), `FROM TO [BIRD]` (move) or `drop TO [BIRD]`")


def _mastermind(words: list[str], view: dict) -> dict[str, Any]:
    verb, args = words[0].lower(), words[1:]
    if verb == "guess" and len(args) == 1:
        return {"type": "guess", "code": _code(args[0])}
    if verb in ("set", "set_code") and len(args) in (1, 2):
        return {
            "type": "set_code",
            "code": _code(args[0]),
            "salt": args[1] if len(args) == 2 else secrets.token_hex(16),
        }
    if verb == "commit" and len(args) == 1:
        if len(args[0]) == 64:
            return {"type": "commit", "commitment": args[0]}
        return _commit(_code(args[0]), view)
    if verb == "feedback" and len(args) == 2:
        return {"type": "feedback", "black": _int(args[0], "black"), "white": _int(args[1], "white")}
    if verb == "reveal" and len(args) == 2:
        return {"type": "reveal", "code": _code(args[0]), "salt": args[1]}
    raise ValueError(f"mastermind: {SYNTAX['mastermind']}")


def _commit(code: list[int], view: dict) -> dict[str, Any]:
    """The MM1 commitment of `code` with a fresh salt (docs/rules/mastermind.md); prints what to keep."""
    if "round" not in view:
        raise ValueError("commit CODE needs the match's view; pass the 64-hex commitment instead")
    from games.mastermind import commitment_of

    salt, digits = secrets.token_hex(16), "".join(map(str, code))
    print(f"  keep this to reveal later: reveal {digits} {salt}")
    return {
        "type": "commit",
        "commitment": commitment_of(view["match_id"], view["round"], view["attempt"], digits, salt),
    }


def _mind_ninja(words: list[str], view: dict) -> dict[str, Any]:
    verb, args = words[0].lower(), words[1:]
    if verb == "bid" and len(args) == 1:
        return {"type": "bid", "value": _int(args[0], "the bid")}
    if verb == "pass" and not args:
        return {"type": "pass"}
    if verb == "pattern" and args:
        rest = " ".join(args)
        if rest.startswith("{"):
            return {"type": "choose_pattern", "pattern": orjson.loads(rest)}
        return {"type": "choose_pattern", "pattern": {"id": rest}}
    if verb == "setup" and args:
        stones = []
        for word in args:
            cell, _, color = word.partition(":")
            stones.append({"cell": _cell(cell), "color": color or "red"})
        return {"type": "setup", "stones": stones}
    if verb in ("end", "end_setup") and not args:
        return {"type": "end_setup"}
    if verb == "role" and len(args) == 1:
        return {"type": "choose_role", "role": args[0].lower()}
    if verb == "decline" and not args:
        return {"type": "decline_free"}
    if verb == "place":
        verb, args = args[0] if args else "", args[1:]
    if "," in verb and len(args) == 1:
        return {"type": "place", "cell": _cell(verb), "color": args[0].lower()}
    raise ValueError(f"mind_ninja: {SYNTAX['mind_ninja']}")


PARSERS: dict[str, Callable[[list[str], dict], dict[str, Any]]] = {
    "strands": _strands,
    "mana": _mana,
    "mastermind": _mastermind,
    "mind_ninja": _mind_ninja,
}
