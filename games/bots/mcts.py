"""Monte Carlo tree search over a game's own board states (UCT, with progressive widening
for huge action spaces and RAVE for games whose moves transpose, like stone placements).

The search knows no rule: it moves with the game's `execute`, asks a `SearchPolicy` (one
per game, see policies_*.py) which actions a node considers and how a playout moves, and
reads the result from the game's `outcome`. Rewards are 1 for a win, 0 for a loss, ½ for
a draw, kept per node from the view of the seat that moved into it, so consecutive moves
by one seat (Mind Ninja's free moves, Mana's passes) need no special case.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from games.core import ActionDict, Game

from .base import Budget

Rewards = tuple[float, float]
DRAW: Rewards = (0.5, 0.5)


class SearchPolicy(Protocol):
    """The game knowledge a search uses; every method must return legal actions only."""

    def candidates(self, game: Game, board: Any, seat: int, rng: random.Random) -> list[ActionDict]:
        """The actions a tree node considers, most promising first (may be a sample)."""

    def rollout_action(self, game: Game, board: Any, seat: int, rng: random.Random) -> ActionDict:
        """The playout's move (cheap, a little smarter than uniform)."""

    def amaf_key(self, action: ActionDict) -> Hashable | None:
        """The identity of a move for RAVE (all-moves-as-first), or None without RAVE."""

    def evaluate(self, game: Game, board: Any) -> Rewards:
        """Rewards of a playout cut at `max_rollout` plies before the game ended."""


@dataclass(frozen=True)
class SearchSettings:
    exploration: float = 0.7  # UCT constant for rewards in [0, 1]
    widening: tuple[float, float] | None = None  # (base, factor): children <= base + factor·√visits
    rave: float = 0.0  # RAVE equivalence constant (0: plain UCT); β = √(k / (3n + k))
    first_play: float = 0.5  # value of an untried move under RAVE before any AMAF statistic
    max_rollout: int = 400  # playout plies before `evaluate` decides


def advance(game: Game, board: Any, seat: int, action: ActionDict) -> Any:
    """The board after `seat` plays `action` (the game's own decide + evolve)."""
    return game.execute(board, seat, game.parse_action(action), 0)[1]


def terminal_rewards(game: Game, board: Any) -> Rewards | None:
    outcome = game.outcome(board)
    if outcome is None:
        return None
    winner = outcome["winner"]
    return DRAW if winner is None else ((1.0, 0.0) if winner == 0 else (0.0, 1.0))


class Node:
    __slots__ = ("action", "amaf", "board", "children", "key", "mover", "rewards", "seat", "untried", "value", "visits")

    def __init__(self, game: Game, board: Any, mover: int | None, action: ActionDict | None, key: Hashable):
        self.board, self.mover, self.action, self.key = board, mover, action, key
        self.rewards = terminal_rewards(game, board)
        self.seat = None if self.rewards is not None else game.to_move(board)[0]
        self.untried: list[ActionDict] | None = None  # filled on the first visit
        self.children: list[Node] = []
        self.visits = 0
        self.value = 0.0
        self.amaf: dict[Hashable, list[float]] = {}  # key -> [visits, reward sum] for `seat`


class Search:
    """One decision's tree. `run` spends the budget and returns the most visited move."""

    def __init__(self, game: Game, policy: SearchPolicy, settings: SearchSettings, rng: random.Random):
        self.game, self.policy, self.settings, self.rng = game, policy, settings, rng

    def choose(self, board: Any, seat: int, budget: Budget) -> ActionDict:
        root = Node(self.game, board, None, None, None)
        candidates = getattr(self.policy, "root_candidates", self.policy.candidates)
        root.untried = candidates(self.game, board, seat, self.rng)
        if len(root.untried) == 1:
            return root.untried[0]
        winning = self._winning_move(root, seat)
        if winning is not None:
            return winning
        meter = budget.meter()
        while not meter.exhausted:
            self._iterate(root)
            meter.spend()
        return self.best(root)

    @staticmethod
    def best(root: Node) -> ActionDict:
        """The most visited move (every budget runs at least one iteration, so one exists)."""
        return max(root.children, key=lambda c: (c.visits, c.value / c.visits)).action

    def _winning_move(self, root: Node, seat: int) -> ActionDict | None:
        """A candidate that wins at once (cheap, and plain UCT may spread its playouts thin)."""
        for action in root.untried:
            rewards = terminal_rewards(self.game, advance(self.game, root.board, seat, action))
            if rewards is not None and rewards[seat] == 1.0:
                return action
        return None

    # --- one iteration: select, expand, play out, back up ----------------------------------------
    def _iterate(self, root: Node) -> None:
        path, moves = [root], []
        node = root
        while node.rewards is None:
            if node.untried is None:
                node.untried = self.policy.candidates(self.game, node.board, node.seat, self.rng)
            nxt = self._select(node)
            moves.append((node.seat, nxt.key))
            path.append(nxt)
            node = nxt
            if nxt.visits == 0:
                break
        rewards = node.rewards if node.rewards is not None else self._rollout(node.board, moves)
        self._back_up(path, moves, rewards)

    def _expand(self, node: Node, index: int) -> Node:
        action = node.untried.pop(index)
        board = advance(self.game, node.board, node.seat, action)
        child = Node(self.game, board, node.seat, action, self.policy.amaf_key(action))
        node.children.append(child)
        return child

    def _select(self, node: Node) -> Node:
        settings = self.settings
        if settings.rave:
            return self._select_rave(node)
        if node.untried and (settings.widening is None or len(node.children) < self._allowed(node.visits)):
            return self._expand(node, 0)
        log_n = math.log(max(node.visits, 1))
        c = settings.exploration
        return max(node.children, key=lambda ch: ch.value / ch.visits + c * math.sqrt(log_n / ch.visits))

    def _allowed(self, visits: int) -> int:
        base, factor = self.settings.widening
        return math.ceil(base + factor * math.sqrt(visits))

    def _select_rave(self, node: Node) -> Node:
        """Children and untried moves compete on their blended (UCT, AMAF) value, so an
        untried move with good all-moves-as-first statistics is tried before bad ones."""
        k, c, fpu = self.settings.rave, self.settings.exploration, self.settings.first_play
        amaf = node.amaf
        log_n = math.log(node.visits + 1)
        best_score, best_child, best_index = -1.0, None, -1
        for child in node.children:
            n = child.visits
            stats = amaf.get(child.key)
            beta = math.sqrt(k / (3 * n + k))
            rave_value = stats[1] / stats[0] if stats else fpu
            score = (1 - beta) * child.value / n + beta * rave_value + c * math.sqrt(log_n / n)
            if score > best_score:
                best_score, best_child = score, child
        explore_new = c * math.sqrt(log_n)
        policy = self.policy
        for index, action in enumerate(node.untried):
            stats = amaf.get(policy.amaf_key(action))
            score = (stats[1] / stats[0] if stats else fpu) + explore_new
            if score > best_score:
                best_score, best_child, best_index = score, None, index
        if best_child is not None:
            return best_child
        return self._expand(node, best_index)

    def _rollout(self, board: Any, moves: list) -> Rewards:
        game, policy, rng = self.game, self.policy, self.rng
        keyed = bool(self.settings.rave)
        for _ in range(self.settings.max_rollout):
            rewards = terminal_rewards(game, board)
            if rewards is not None:
                return rewards
            seat = game.to_move(board)[0]
            action = policy.rollout_action(game, board, seat, rng)
            if keyed:
                moves.append((seat, policy.amaf_key(action)))
            board = advance(game, board, seat, action)
        return terminal_rewards(game, board) or policy.evaluate(game, board)

    def _back_up(self, path: list[Node], moves: list, rewards: Rewards) -> None:
        rave = bool(self.settings.rave)
        for depth, node in enumerate(path):
            node.visits += 1
            if node.mover is not None:
                node.value += rewards[node.mover]
            if rave and node.seat is not None:
                self._update_amaf(node, moves[depth:], rewards[node.seat])

    @staticmethod
    def _update_amaf(node: Node, later: list, reward: float) -> None:
        seen = set()
        amaf, seat = node.amaf, node.seat
        for mover, key in later:
            if mover != seat or key is None or key in seen:
                continue
            seen.add(key)
            stats = amaf.get(key)
            if stats is None:
                amaf[key] = [1, reward]
            else:
                stats[0] += 1
                stats[1] += reward
