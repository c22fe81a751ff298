"""Upcasters: how a reader reads every older form of a record through the current models
(docs/evolving.md, "Evolving the rules and the contract").

A record kind has a form version; each step from version n to n + 1 is one pure function here,
registered in STEPS, and `upcast(kind, data)` applies the steps from the record's own version to
CURRENT. A reader (the fold's parse of a create, a reader of `match_created` in results) upcasts
before it validates, so the models and the code after them know only the current form. Upcasters
never write: the log keeps the bytes it was written with, and what a record *means* (its fold,
its result bytes) is the fold's business, which keeps what the record stated
(`stated_rules`), not what an upcaster filled in.

Forms so far:

- `create` (a create action on plylog.moves) and `match_created` (its event on plylog.results):
  form 0 has no `rules` (every create before rules versions); form 1 names its rules version.
  0 -> 1: the rules are `<game>/1`, the only rules there were.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Record = dict[str, Any]
Upcaster = Callable[[Record], Record]


def create_0_to_1(create: Record) -> Record:
    """A create (or `match_created`) without `rules` was played under version 1 of its game."""
    return {**create, "rules": f"{create['game']}/1"}


#: kind -> {form n: the function from form n to form n + 1}. Append only.
STEPS: dict[str, dict[int, Upcaster]] = {
    "create": {0: create_0_to_1},
    "match_created": {0: create_0_to_1},
}

#: The form every reader works with, per kind.
CURRENT = {kind: max(steps) + 1 for kind, steps in STEPS.items()}


def form_of(kind: str, data: Record) -> int:
    """The form a record was written in (creates tell theirs by whether they name their rules)."""
    if kind in ("create", "match_created"):
        return 1 if "rules" in data else 0
    raise KeyError(kind)


def upcast(kind: str, data: Record) -> Record:
    """`data` in the current form of `kind` (a new dict when a step applies; `data` untouched)."""
    form = form_of(kind, data)
    while form < CURRENT[kind]:
        data = STEPS[kind][form](data)
        form += 1
    return data


def stated_rules(create: Record) -> bool:
    """Whether a create (or `match_created`) as written named its rules: only such a match carries a
    receipt chain and a `rules` in its events, so legacy matches keep their result bytes."""
    return form_of("create", create) >= 1
