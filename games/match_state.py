"""A match as a value: its state (`MatchState`), how one event changes it (`evolve`), and what
clients see of it (`view`, `render`). Shared by every game; it knows no rule of any game (the
board is the game's own value, folded by the match's own rules version).

What an action decides is `games.match`'s job; this module never raises `Rejected`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from schemas.upcast import stated_rules, upcast

from .clocks import AnyClockState, new_clock
from .core import Event, Frozen, Game
from .registry import get_game, rules_name, rules_version
from .timeutil import to_ms
from .vacation import evolve_vacation


class MatchState(Frozen):
    match_id: str
    game: str
    seats: tuple[str | None, str | None]
    invited: tuple[str | None, str | None] | None = None  # seats reserved for a named player
    status: Literal["waiting", "active", "over"]
    seq: int = 0
    # Digests (`games.fold.id_digest`, all of one width) of the (player, event_id) of the last
    # ID_MEMORY accepted records, oldest first and concatenated; the last one made `seq`. Bounded,
    # so public input cannot grow a state without limit. One string, not a list: the worker
    # encodes a state per changed match and batch, and 128 strings were half of that encoding.
    recent_ids: str = ""
    options: dict[str, Any]
    clock: AnyClockState | None = None
    board: Any  # the game's own state value
    game_actions: int = 0
    created_at: str
    started_at: str | None = None
    ended_at: str | None = None
    outcome: dict[str, Any] | None = None
    # Set only by an unrated create or an adjudication, and serialised only then, so that the states
    # of every other match keep their bytes.
    unrated: bool = Field(default=False, exclude_if=lambda value: not value)
    # The tournament service when it created the match (it alone may `adjudicate` it); None otherwise.
    creator: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # The rules version the match is folded by for its whole life (docs/evolving.md). Stored states
    # and creates without it are version 1; serialised only when not 1 or stated, so theirs keep their bytes.
    rules_version: int = Field(default=1, exclude_if=lambda value: value == 1)
    # Whether the create stated `rules`: only then does the match carry a receipt chain (`chain`,
    # the last link: games/receipts.py), so legacy matches keep their result bytes.
    rules_stated: bool = Field(default=False, exclude_if=lambda value: not value)
    chain: str | None = Field(default=None, exclude_if=lambda value: value is None)

    @field_validator("recent_ids", mode="before")
    @classmethod
    def _joined(cls, value: Any) -> Any:
        """States stored before the digests were joined hold them as a list."""
        return "".join(value) if isinstance(value, (list, tuple)) else value

    @property
    def rules(self) -> Game:
        """The game under the match's own rules version."""
        return get_game(self.game, self.rules_version)

    @property
    def rules_name(self) -> str:
        return rules_name(self.game, self.rules_version)

    @property
    def rated(self) -> bool:
        """Aborted, adjudicated and unrated-by-create matches and matches against oneself (hot seat)
        do not count."""
        aborted = self.outcome is not None and self.outcome.get("reason") == "aborted"
        return not aborted and not self.unrated and self.seats[0] != self.seats[1]

    def to_move(self) -> tuple[int, ...]:
        return self.rules.to_move(self.board) if self.status == "active" else ()

    # --- JSON round trip (the game state is typed by the game's own model) ----------------------
    def to_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"board"})
        data["board"] = self.rules.dump_state(self.board)
        return data

    def json_bytes(self) -> bytes:
        """`to_json()` as JSON bytes, serialised by pydantic in one pass (the board by its own
        model, the value's runtime type): the rules worker encodes a state per changed match and
        batch, and building the dicts first cost about twice as much. Keys may come in another
        order than `to_json()`'s; the JSON value is the same (tested on random playouts)."""
        return self.__pydantic_serializer__.to_json(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MatchState:
        data = dict(data)
        # States stored before ids were digests kept every event id in clear (`event_ids`). They
        # are dropped: retries of submissions made before the upgrade are decided again.
        data.pop("event_ids", None)
        data["board"] = get_game(data["game"], data.get("rules_version", 1)).load_state(data["board"])
        return cls.model_validate(data)


def evolve(state: MatchState | None, event: Event) -> MatchState:
    """The match after one event; game events go to the game's own evolve."""
    kind = event["type"]
    if kind == "match_created":
        created = upcast("match_created", event)
        version = rules_version(created["game"], created["rules"])
        game = get_game(event["game"], version)
        clock = event.get("clock")
        invited = event.get("invited")
        return MatchState(
            match_id=event["match_id"],
            game=event["game"],
            seats=tuple(event["seats"]),
            invited=tuple(invited) if invited else None,
            status="waiting",
            options=event["options"],
            board=game.initial(event["options"], event["match_id"]),
            clock=None if clock is None else new_clock(clock),
            created_at=event["at"],
            unrated=event.get("rated") is False,
            creator=event.get("_creator"),
            rules_version=version,
            rules_stated=stated_rules(event),
        )
    assert state is not None, f"{kind} before match_created"
    if kind == "seat_joined":
        seats = list(state.seats)
        seats[event["seat"]] = event["player"]
        return state.evolved(seats=tuple(seats))
    if kind == "match_started":
        clock = state.clock.started(to_ms(event["at"])) if state.clock else None
        return state.evolved(status="active", started_at=event["at"], clock=clock)
    if kind == "match_ended":
        outcome = {"winner": event["winner"], "reason": event["reason"], "scores": event.get("scores")}
        clock = state.clock
        if clock is not None and state.status == "active":
            clock = clock.stopped(to_ms(event["at"]), set(state.to_move()))
        unrated = state.unrated or event.get("rated") is False
        return state.evolved(status="over", outcome=outcome, ended_at=event["at"], clock=clock, unrated=unrated)
    if kind in ("vacation_started", "vacation_ended"):
        return evolve_vacation(state, event)
    return state.evolved(board=state.rules.evolve(state.board, event))


def count_game_action(state: MatchState, seat: int, at: str) -> MatchState:
    """Record-level bookkeeping `execute` does for a game action, for event-level replay."""
    clock = None if state.clock is None else state.clock.charged(seat, to_ms(at), state.to_move())
    return state.evolved(game_actions=state.game_actions + 1, clock=clock)


# --- views ----------------------------------------------------------------------------------------
def view(state: MatchState, seat: int | None = None) -> dict[str, Any]:
    """The match as a client sees it (seat None = public: never a secret)."""
    game_view = state.rules.view(state.board, seat)
    clock, to_move = state.clock, state.to_move()
    data: dict[str, Any] = {
        "match_id": state.match_id,
        "game": state.game,
        "seats": list(state.seats),
        "status": state.status,
        "seq": state.seq,
        "to_move": list(to_move),
        "clock": None if clock is None else clock.view(to_move),
        "outcome": state.outcome,
        "created_at": state.created_at,
        "started_at": state.started_at,
        "ended_at": state.ended_at,
    }
    if state.invited is not None:  # only then, so views of other matches keep their bytes
        data["invited"] = list(state.invited)
    if state.unrated:  # likewise
        data["rated"] = False
    data.update(game_view)
    return data


LIFECYCLE_VIEW_KEYS = frozenset(
    {
        "match_id",
        "game",
        "seats",
        "status",
        "seq",
        "to_move",
        "clock",
        "outcome",
        "created_at",
        "started_at",
        "ended_at",
        "invited",
        "rated",
    }
)


def render(state: MatchState) -> str:
    """Text picture of the match for terminals (`plylog replay --show`, `plylog show`)."""
    seats = " vs ".join(f"{state.rules.seat_names[i]}={p or '(open)'}" for i, p in enumerate(state.seats))
    status: str = state.status
    if state.outcome:
        winner = state.outcome["winner"]
        status += (
            f" — {'draw' if winner is None else state.rules.seat_names[winner] + ' wins'} ({state.outcome['reason']})"
        )
    elif state.status == "active":
        status += ", to move: " + ", ".join(state.rules.seat_names[s] for s in state.to_move())
    return f"{state.match_id} [{state.game}] seq {state.seq} · {seats} · {status}\n{state.rules.render(state.board)}"
