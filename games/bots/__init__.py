"""Pure bots for plylog's games (no I/O; deterministic given an rng seed and a playout budget).

    from games.bots import make_bot, Budget
    bot = make_bot("mcts-2")                          # or default_bot_id(state.game)
    action = bot.choose(match_state, seat, random.Random(seed))   # a dict `decide` accepts

docs/bots.md gives the levels, their measured strength and how to write a bot.
"""

from .base import Bot, BotError, Budget
from .registry import DEFAULTS, LEVELS, bot_ids, default_bot_id, make_bot, player_id

__all__ = ["DEFAULTS", "LEVELS", "Bot", "BotError", "Budget", "bot_ids", "default_bot_id", "make_bot", "player_id"]
