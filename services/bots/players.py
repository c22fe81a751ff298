"""The bot service's decisions, free of Kafka and Redis: from a match's public position and its
latest result, the move records its bots send.

- A bot decides only where the view says its seat is to move, from the public position (never a
  secret: the Mastermind codemaker derives its own code from the service's secret key).
- The record's `event_id` is `bot:<id>:<seq>`: a restarted service that decides the same turn
  again sends the same id, answered `duplicate`, so no bot ever moves twice. `expected_seq` is
  the seq it decided at, so a decision overtaken by another record is rejected `stale`.
- With a clock the search stops within a share of the seat's remaining time.
- A bot move the rules refuse (a bug) is replaced once by a random legal move (`:retry`), so a
  match against a bot never waits for ever.
"""

from __future__ import annotations

import hashlib
import logging
import random
from dataclasses import dataclass
from typing import Any

from games.bots import Bot, Budget, make_bot
from games.public import PublicPosition
from games.timeutil import from_ms

log = logging.getLogger("plylog.bots")
BOT_PREFIX = "bot:"
ENTRY_MARK = "~"  # bot:random~3: the bot `random`, as the entrant `bot:random~3`
BOTS_ONLY = "(bots only)"  # the lane of the matches no person plays
SHARE_OF_REMAINING_TIME = 1 / 30  # of the seat's time left, spent on one decision
MIN_THINK_S, MAX_THINK_S = 0.05, 5.0


@dataclass(frozen=True)
class Turn:
    """A bot seat to move in a match at a seq."""

    match_id: str
    seq: int
    seat: int
    player: str  # bot:<id>


def is_bot(player: str | None) -> bool:
    return isinstance(player, str) and player.startswith(BOT_PREFIX)


class BotPlayers:
    """The bots one service plays, by player id (`bot:<id>`)."""

    def __init__(self, bot_ids: list[str], secret_key: bytes):
        self._secret = secret_key
        self.bots: dict[str, Bot] = {BOT_PREFIX + i: make_bot(i, secret_key) for i in bot_ids}
        self._fallback = make_bot("random", secret_key)

    def turns(self, view: dict[str, Any]) -> list[Turn]:
        """The seats of ours this view says are to move."""
        if view.get("status") != "active":
            return []
        seats = view["seats"]
        return [
            Turn(view["match_id"], view["seq"], seat, seats[seat])
            for seat in view.get("to_move", [])
            if self.bot_of(seats[seat]) is not None
        ]

    def bot_of(self, player: object) -> Bot | None:
        """The bot that plays `player`: `bot:<id>`, or `bot:<id>~<entry>` (one of several entries of
        the same bot, e.g. in a tournament, where every entrant is a player of its own)."""
        if not isinstance(player, str):
            return None
        return self.bots.get(player.split(ENTRY_MARK, 1)[0])

    def plays_in(self, view: dict[str, Any]) -> bool:
        return any(self.bot_of(player) is not None for player in view.get("seats", []))

    def searches(self, player: str, retry: bool = False) -> bool:
        """Whether the decision of `player` is a search (worth a worker process) or instant."""
        return not retry and getattr(self.bot_of(player), "searches", True)

    def move(
        self, turn: Turn, position: PublicPosition, view: dict[str, Any], now_ms: int, retry: bool = False
    ) -> dict[str, Any]:
        """The move record of `turn` (decided on `position`, the public match at `turn.seq`)."""
        bot = self._fallback if retry else self.bot_of(turn.player)
        assert bot is not None, "turns() names only players of ours"
        action = bot.choose(position.state, turn.seat, self._rng(turn), self._budget(bot, view, turn.seat, now_ms))
        return {
            "v": 1,
            # '~' is not of the event id grammar: bot:random~3 moves as bot:random.3:<seq>
            "event_id": f"{turn.player.replace(ENTRY_MARK, '.')}:{turn.seq}" + (":retry" if retry else ""),
            "match_id": turn.match_id,
            "player": turn.player,
            "expected_seq": turn.seq,
            "at": from_ms(now_ms),
            "action": action,
        }

    def _rng(self, turn: Turn) -> random.Random:
        """Its own, unguessable rng per decision (the service's key, the match, the seq)."""
        seed = hashlib.sha256(self._secret + f"|{turn.match_id}|{turn.seq}|{turn.seat}".encode()).digest()
        return random.Random(seed)

    @staticmethod
    def _budget(bot: Bot, view: dict[str, Any], seat: int, now_ms: int) -> Budget | None:
        default = bot.default_budget(view["game"]) if hasattr(bot, "default_budget") else None
        clock = view.get("clock")
        if not clock or clock.get("since_ms") is None:
            return default
        left_s = (clock["remaining_ms"][seat] - max(0, now_ms - clock["since_ms"])) / 1000
        think = min(MAX_THINK_S, max(MIN_THINK_S, left_s * SHARE_OF_REMAINING_TIME))
        return Budget(playouts=default.playouts if default else None, seconds=think)


def lane(view: dict[str, Any]) -> str:
    """Whom the bots of this match think for, when the service shares its time between players: the
    people seated in it (a match of bots only shares one lane with every other such match)."""
    people = sorted({p for p in view.get("seats", []) if isinstance(p, str) and not is_bot(p)})
    return ",".join(people) or BOTS_ONLY


def our_rejected_move(result: dict[str, Any], bots: BotPlayers) -> bool:
    """A rejected result of one of our bots' moves (not of its retry)."""
    event_id = result.get("event_id") or ""
    return (
        result.get("status") == "rejected"
        and bots.bot_of(result.get("player")) is not None
        and not event_id.endswith(":retry")
        and (result.get("reason") or {}).get("code") != "stale"
    )
