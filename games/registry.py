"""The games plylog knows, by wire name, and every version of each game's rules.

A rules version is a Game object that never changes once shipped: a match is folded by the
version its create stated (or version 1, when it stated none) for its whole life, so a rules
change is a new version beside the old ones (docs/evolving.md), never an edit of a shipped one.
"""

from __future__ import annotations

import importlib
from functools import cache

from .core import Game, Rejected

GAME_MODULES = {
    "mastermind": "games.mastermind",
    "strands": "games.strands",
    "mana": "games.mana",
    "mind_ninja": "games.mind_ninja",
}

#: Every shipped rules version of every game: version -> the attribute of the game's module that
#: holds its Game. Append only: a version once shipped folds its matches for ever.
RULES_VERSIONS: dict[str, dict[int, str]] = {
    "mastermind": {1: "GAME"},
    "strands": {1: "GAME", 2: "GAME_V2"},
    "mana": {1: "GAME"},
    "mind_ninja": {1: "GAME"},
}

#: The version a new match gets when its create is written by the gateway: the one place to
#: change to make a newer version the default (docs/evolving.md).
CURRENT_RULES: dict[str, int] = {"mastermind": 1, "strands": 1, "mana": 1, "mind_ninja": 1}


@cache
def get_game(name: str, version: int = 1) -> Game:
    """The game object for a wire name and rules version (`KeyError` if there is none)."""
    module = importlib.import_module(GAME_MODULES[name])
    game: Game = getattr(module, RULES_VERSIONS[name][version])
    return game


def rules_name(game: str, version: int) -> str:
    """The wire name of a rules version: `strands/2`."""
    return f"{game}/{version}"


def current_rules(game: str) -> str:
    """The rules version new matches of `game` are created under (what the gateway stamps)."""
    return rules_name(game, CURRENT_RULES[game])


def rules_version(game: str, rules: str) -> int:
    """The version number `rules` (already matching RULES_PATTERN) names for a create of `game`;
    Rejected("unknown_rules") when it names another game or a version that does not exist."""
    named, _, number = rules.partition("/")
    if named != game:
        raise Rejected("unknown_rules", f"rules {rules!r} are not rules of {game}; state {game}/<version>")
    version = int(number)
    if version not in RULES_VERSIONS[game]:
        known = ", ".join(rules_name(game, v) for v in sorted(RULES_VERSIONS[game]))
        raise Rejected("unknown_rules", f"{game} has no rules version {version} (known: {known})")
    return version


def rules_to_state(game: str, asked: str | None) -> str:
    """The version a door (the gateway) states on a record that makes matches of `game`: the one
    asked for, once it exists (else Rejected `unknown_rules`), or the version in force."""
    if asked is None:
        return current_rules(game)
    rules_version(game, asked)
    return asked
