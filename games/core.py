"""The decider interface every game implements, and the values shared by all of them.

A game is a tiny object (like a scalachess variant) whose methods are pure functions over
immutable, JSON-serialisable states:

    initial(options, match_id)        -> state
    decide(state, seat, action, at)   -> [event, ...]   or raise Rejected(code, message)
    evolve(state, event)              -> state
    to_move(state)                    -> seats whose action is awaited
    outcome(state)                    -> None | {"winner": seat|None, "reason": str, "scores": ...}
    view(state, seat|None)            -> compact JSON view (None = public: no secret)
    legal_actions(state, seat)        -> iterable of action dicts decide would accept
    render(state)                     -> text picture for `plylog replay --show`

Events are plain dicts with a "type". Keys starting with "_" are private: they carry what
evolve needs but nobody may see (a Mastermind secret) and are stripped by `public_event`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, ClassVar, Self, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

Event = dict[str, Any]
ActionDict = dict[str, Any]


class Rejected(Exception):
    """A refused action, as a value: a contract rejection code and a message saying why."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def illegal(message: str) -> Rejected:
    return Rejected("illegal", message)


class Frozen(BaseModel):
    """Base of every rules state: immutable (copy with `evolved`), JSON round trip exact."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="strings")

    def evolved(self, **changes: Any) -> Self:
        """A copy with `changes`; the cheap way to build the next state (no re-validation).
        Leaner than `model_copy` (which deep-copies bookkeeping) because states are never
        mutated, so the copy may share everything it does not change."""
        fields = self.__dict__.copy()
        fields.update(changes)
        copy = self.__class__.__new__(self.__class__)
        object.__setattr__(copy, "__dict__", fields)
        object.__setattr__(copy, "__pydantic_fields_set__", self.__pydantic_fields_set__.union(changes))
        object.__setattr__(copy, "__pydantic_extra__", None)
        object.__setattr__(copy, "__pydantic_private__", None)
        return copy


def public_event(event: Event) -> Event:
    """The event without its private ("_"-prefixed) fields."""
    if any(key[0] == "_" for key in event):
        return {k: v for k, v in event.items() if k[0] != "_"}
    return event


def describe_validation_error(error: ValidationError, what: str) -> str:
    """One readable line from a pydantic error: where and what, for a rejection message."""
    parts = []
    for item in error.errors()[:3]:
        where = ".".join(str(p) for p in item["loc"])
        msg = item["msg"]
        if item["type"] == "extra_forbidden":
            msg = "unknown field"
        elif item["type"] == "union_tag_invalid":
            msg = f"unknown type {item.get('input', {}).get('type')!r}" if isinstance(item.get("input"), dict) else msg
        parts.append(f"{where}: {msg}" if where else msg)
    more = len(error.errors()) - 3
    tail = f" (and {more} more)" if more > 0 else ""
    return f"{what}: " + "; ".join(parts) + tail


class Game:
    """Base class of the four games. Subclasses set the class variables and override the
    methods; all of them are pure."""

    name: ClassVar[str]
    options_model: ClassVar[type[BaseModel]]
    action_models: ClassVar[tuple[type[BaseModel], ...]]
    state_model: ClassVar[type[Frozen]]
    seat_names: ClassVar[tuple[str, str]] = ("seat 0", "seat 1")
    _action_types: ClassVar[dict[str, type[BaseModel]]]  # action type -> its model (set per subclass)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if getattr(cls, "action_models", None):
            cls._action_types = {get_args(m.model_fields["type"].annotation)[0]: m for m in cls.action_models}

    # --- options and actions -------------------------------------------------------------
    def normalise_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Validated options with every default filled in, as they go into `match_created`.
        Schema errors raise `Rejected("malformed")`, impossible values `Rejected("illegal")`."""
        try:
            model = self.options_model.model_validate(options)
        except ValidationError as error:
            raise Rejected("malformed", describe_validation_error(error, f"{self.name} options")) from None
        return model.model_dump(mode="json")

    def parse_action(self, action: dict[str, Any]) -> BaseModel:
        """The typed game action; `Rejected("malformed")` if it is not one of this game's."""
        kind = action.get("type")
        model = self._action_types.get(kind) if isinstance(kind, str) else None
        if model is None:
            known = ", ".join(sorted(self._action_types))
            raise Rejected("malformed", f"action type {kind!r} is not a {self.name} action (known: {known})")
        try:
            return model.model_validate(action)
        except ValidationError as error:
            raise Rejected("malformed", describe_validation_error(error, f"{kind} action")) from None

    # --- the decider ------------------------------------------------------------------------
    def initial(self, options: dict[str, Any], match_id: str) -> Frozen:
        raise NotImplementedError

    def decide(self, state: Any, seat: int, action: Any, at_ms: int) -> list[Event]:
        raise NotImplementedError

    def evolve(self, state: Any, event: Event) -> Any:
        raise NotImplementedError

    def execute(self, state: Any, seat: int, action: Any, at_ms: int) -> tuple[list[Event], Any]:
        """`decide`, then `evolve` over its events: (events, new state). A game that must
        evolve while deciding (to see what its move leads to) overrides this to not do it twice;
        the property tests check that evolve over the events gives the same state."""
        events = self.decide(state, seat, action, at_ms)
        return events, self.apply(state, events)

    def to_move(self, state: Any) -> tuple[int, ...]:
        raise NotImplementedError

    def outcome(self, state: Any) -> dict[str, Any] | None:
        raise NotImplementedError

    def scores(self, state: Any) -> Any:
        """The scores so far, for an outcome the game itself did not decide (resign, timeout,
        abort); None where the game keeps no score."""
        return None

    def view(self, state: Any, seat: int | None) -> dict[str, Any]:
        raise NotImplementedError

    def legal_actions(self, state: Any, seat: int) -> Iterable[ActionDict]:
        raise NotImplementedError

    def random_action(self, state: Any, seat: int, rng: random.Random) -> ActionDict | None:
        """A uniformly chosen legal action (bots, benchmarks); games with huge action spaces
        override it to sample without enumerating."""
        actions = list(self.legal_actions(state, seat))
        return rng.choice(actions) if actions else None

    def render(self, state: Any) -> str:
        raise NotImplementedError

    # --- helpers for subclasses ------------------------------------------------------------------
    def apply(self, state: Any, events: Iterable[Event]) -> Any:
        for event in events:
            state = self.evolve(state, event)
        return state

    def load_state(self, data: dict[str, Any]) -> Frozen:
        return self.state_model.model_validate(data)

    def dump_state(self, state: Frozen) -> dict[str, Any]:
        return state.model_dump(mode="json")
