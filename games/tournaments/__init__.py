"""Tournaments: pure deciders over a tournament's records (docs/tournaments.md).

    decide(state | None, record) -> [event, ...]   or raise Rejected(code, message)
    evolve(state | None, event)  -> state          (`initial(created_event)` is the first state)
    step(state | None, record)   -> Step(state, result record)   the fold the service runs
    wake_at(state)               -> epoch ms of the next tick worth writing, or None
    to_create(state)             -> the pairings whose matches the service must create
    to_end(state)                -> the pairings decided without play whose matches it must end
                                    (`adjudicate_record`)
    standings(state), crosstable(state)

Formats: swiss, round_robin, knockout, arena (one module each). Only `schemas` and the rest of
`games` are imported; no I/O, no clock, no randomness.
"""

from __future__ import annotations

from .decider import FORMATS, decide, wake_at
from .evolve import evolve, initial
from .fold import Step, read, replay, step
from .matches import adjudicate_record, create_record, to_create, to_end
from .standings import crosstable, standings
from .state import Pairing, TournamentState, create_event_id, match_id_of

__all__ = [
    "FORMATS",
    "Pairing",
    "Step",
    "TournamentState",
    "adjudicate_record",
    "create_event_id",
    "create_record",
    "crosstable",
    "decide",
    "evolve",
    "initial",
    "match_id_of",
    "read",
    "replay",
    "standings",
    "step",
    "to_create",
    "to_end",
    "wake_at",
]
