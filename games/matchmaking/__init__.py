"""Finding an opponent (docs/matchmaking.md): seeks and pools folded by a pure decider, so pairing
is deterministic, replayable and auditable.

    decide(lobby, record)  -> [event, ...] or Rejected     (games.matchmaking.decide)
    evolve(lobby, event)   -> lobby                         (games.matchmaking.state)
    step(lobby, record)    -> LobbyStep(lobby, result, creates)  (games.matchmaking.fold)
"""

from .decide import apply, decide
from .fold import LobbyStep, Matchmaker, Unreadable, create_record, encode, read, replay, step
from .pairing import Pair, pool_pairs
from .rules import window
from .state import Lobby, OpenSeek, PoolEntry, evolve

__all__ = [
    "Lobby",
    "LobbyStep",
    "Matchmaker",
    "OpenSeek",
    "Pair",
    "PoolEntry",
    "Unreadable",
    "apply",
    "create_record",
    "decide",
    "encode",
    "evolve",
    "pool_pairs",
    "read",
    "replay",
    "step",
    "window",
]
