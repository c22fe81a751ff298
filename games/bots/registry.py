"""The named bots. A bot's player id is `bot:<id>`.

| id | games | what |
|---|---|---|
| `random` | all | the game's uniformly random legal action |
| `mcts-1`, `mcts-2`, `mcts-3` | strands, mana, mind_ninja | MCTS; playouts per move per game in `MCTS_PLAYOUTS` |
| `consistent`, `knuth`, `entropy`, `expected-size`, `most-parts` | mastermind | codebreaker strategies |

Defaults: `most-parts` for Mastermind, `mcts-2` for the others (`DEFAULTS`). Mastermind
levels are its strategies: `LEVELS` orders every game's bots from weak to strong.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import Bot
from .mastermind_bot import MastermindBot
from .mcts_bot import MctsBot
from .random_bot import RandomBot

# Playouts per move, per level and game (Mind Ninja's playouts are longest: 127 cells).
MCTS_PLAYOUTS = {
    "mcts-1": {"strands": 16, "mana": 16, "mind_ninja": 12},
    "mcts-2": {"strands": 128, "mana": 128, "mind_ninja": 48},
    "mcts-3": {"strands": 512, "mana": 512, "mind_ninja": 192},
}
MASTERMIND_STRATEGIES = ("consistent", "knuth", "entropy", "expected-size", "most-parts")  # weak to strong

DEFAULTS = {"mastermind": "most-parts", "strands": "mcts-2", "mana": "mcts-2", "mind_ninja": "mcts-2"}
LEVELS = {
    "mastermind": ("random", *MASTERMIND_STRATEGIES),
    "strands": ("random", *MCTS_PLAYOUTS),
    "mana": ("random", *MCTS_PLAYOUTS),
    "mind_ninja": ("random", *MCTS_PLAYOUTS),
}

_MAKERS: dict[str, Callable[[bytes | None], Bot]] = {
    "random": lambda key: RandomBot(key),
    **{name: (lambda key, n=name, p=playouts: MctsBot(n, p)) for name, playouts in MCTS_PLAYOUTS.items()},
    **{name: (lambda key, n=name: MastermindBot(n, key)) for name in MASTERMIND_STRATEGIES},
}
PLAYER_PREFIX = "bot:"


def bot_ids(game: str | None = None) -> list[str]:
    """Every bot id, or those that play `game` (weak to strong)."""
    return list(LEVELS[game]) if game is not None else list(_MAKERS)


def make_bot(bot_id: str, secret_key: bytes | None = None) -> Bot:
    """The bot named `bot_id` (KeyError naming the known ids if there is none). `secret_key`
    is the installation's key the Mastermind codemaker derives its secrets from (see
    mastermind_maker); without it, a public offline key."""
    if bot_id.startswith(PLAYER_PREFIX):
        bot_id = bot_id[len(PLAYER_PREFIX) :]
    maker = _MAKERS.get(bot_id)
    if maker is None:
        raise KeyError(f"no bot {bot_id!r}; known: {', '.join(_MAKERS)}")
    return maker(secret_key)


def default_bot_id(game: str) -> str:
    return DEFAULTS[game]


def player_id(bot_id: str) -> str:
    return PLAYER_PREFIX + bot_id
