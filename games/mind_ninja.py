"""Mind Ninja (Nick Bentley, 2007), as docs/rules/mind-ninja.md describes it.

Phases: bidding -> pattern -> setup -> roles -> play -> over.

Events: `bid_made{seat,value}`, `bidding_closed{chooser,inventor,free_moves}`,
`pattern_chosen{seat,pattern}` (normalised), `stones_set_up{seat,stones}`, `setup_ended{seat}`,
`role_chosen{seat,role,builder,blocker}`, `stone_placed{seat,cell,color,free}`,
`free_move_declined{seat,free_moves_left}`.

Patterns are judged incrementally (see games/mind_ninja_patterns.py): a placement costs what it
changed, not a board scan. Outcome: reason `pattern_formed` (builder wins) or `board_full`
(blocker wins); scores `{"pattern", "builder", "blocker", "cells"}` (see schemas/mind_ninja.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any, Literal

from schemas.mind_ninja import (
    MIND_NINJA_ACTIONS,
    Bid,
    ChoosePattern,
    ChooseRole,
    DeclineFree,
    EndSetup,
    MindNinjaOptions,
    Pass,
    Place,
    Setup,
)

from .core import Event, Frozen, Game, illegal
from .hexgrid import HexBoard, hex_board
from .mind_ninja_patterns import (
    CATALOGUE_IDS,
    COLOUR_INDEX,
    CompiledPattern,
    add_stone,
    cell_count,
    compile_pattern,
    empty_union_find,
    judge,
    normalise_pattern,
    pattern_text,
    witness,
)

COLOURS = ("red", "blue")
Phase = Literal["bidding", "pattern", "setup", "roles", "play", "over"]

PHASE_HINT = {
    "bidding": "the players are bidding (bid or pass)",
    "pattern": "the inventor is choosing the pattern (choose_pattern)",
    "setup": "the inventor is setting up stones (setup, end_setup)",
    "roles": "the chooser is choosing a role (choose_role)",
    "play": "the players are placing stones (place)",
    "over": "the game is over",
}


class MindNinjaState(Frozen):
    side: int
    phase: Phase = "bidding"
    bids: tuple[tuple[int, int], ...] = ()  # (seat, value) in order
    chooser: int | None = None
    inventor: int | None = None
    free_moves: int = 0
    pattern: str | None = None  # the normalised pattern, as JSON text
    builder: int | None = None
    mover: int = 0  # seat to place in the play phase
    free_pending: bool = False  # the chooser may now place a free stone or decline it
    board: str  # canonical order: '.' empty, 'R' red, 'B' blue
    empty: int
    # Union-find over the stones, one character per cell (see games/mind_ninja_patterns.py):
    parent: str  # chr(parent index); roots and empty cells point to themselves
    sizes: str  # per root: chr(48 + group size)
    masks: str  # per root: chr(48 + (sides | corners << 6)) touched by the group
    holes: tuple[int, int] = (0, 0)  # holes of the red / blue stone sets (ring)
    formed: int = 0  # sticky formed bits of the monotone primitives: bit 2*leaf + colour
    placements: int = 0  # stones placed in the play phase
    winner: int | None = None
    reason: str | None = None
    win_cells: tuple[int, ...] | None = None

    @property
    def geometry(self) -> HexBoard:
        return hex_board(self.side)

    @property
    def compiled(self) -> CompiledPattern | None:
        return None if self.pattern is None else compile_pattern(self.pattern, self.side)

    @property
    def chosen(self) -> CompiledPattern:
        """The compiled pattern, in the phases after it was chosen."""
        compiled = self.compiled
        assert compiled is not None, f"no pattern is chosen yet (phase {self.phase})"
        return compiled

    @property
    def high_bid(self) -> int | None:
        return self.bids[-1][1] if self.bids else None


def pattern_formed(state: MindNinjaState) -> bool:
    """The judge on the current position (False before a pattern is chosen)."""
    comp = state.compiled
    return comp is not None and judge(comp, state, state.empty)


class MindNinja(Game):
    name = "mind_ninja"
    options_model = MindNinjaOptions
    action_models = MIND_NINJA_ACTIONS
    state_model = MindNinjaState

    def initial(self, options: dict[str, Any], match_id: str) -> MindNinjaState:
        side = options["side"]
        size = cell_count(side)
        parent, sizes, masks = empty_union_find(size)
        return MindNinjaState(side=side, board="." * size, empty=size, parent=parent, sizes=sizes, masks=masks)

    # --- turn order -----------------------------------------------------------------------------
    def to_move(self, state: MindNinjaState) -> tuple[int, ...]:
        phase = state.phase
        if phase == "play":
            return (state.mover,)
        if phase == "bidding":
            return (len(state.bids) % 2,)
        if (phase == "pattern" or phase == "setup") and state.inventor is not None:
            return (state.inventor,)
        if phase == "roles" and state.chooser is not None:
            return (state.chooser,)
        return ()

    # --- decide ---------------------------------------------------------------------------------
    def decide(self, state: MindNinjaState, seat: int, action: Any, at_ms: int) -> list[Event]:
        handler = DECIDERS[action.type]
        return handler(self, state, seat, action)

    def _phase(self, state: MindNinjaState, wanted: str, action: str) -> None:
        if state.phase != wanted:
            raise illegal(
                f"{action} belongs to the {wanted} phase, but the match is in the {state.phase} phase: "
                f"{PHASE_HINT[state.phase]}"
            )

    def _bid(self, state: MindNinjaState, seat: int, action: Bid) -> list[Event]:
        self._phase(state, "bidding", "a bid")
        value, high, cells = action.value, state.high_bid, cell_count(state.side)
        if value < 0:
            raise illegal(f"a bid is a number of free moves, at least 0, not {value}")
        if high is not None and value <= high:
            raise illegal(f"a bid must exceed the current bid of {high} (seat {state.bids[-1][0]}); {value} does not")
        if value > cells:
            raise illegal(f"a bid is at most {cells}, the number of cells, not {value}")
        return [{"type": "bid_made", "seat": seat, "value": value}]

    def _pass(self, state: MindNinjaState, seat: int, action: Pass) -> list[Event]:
        self._phase(state, "bidding", "pass")
        return [{"type": "bidding_closed", "chooser": seat, "inventor": 1 - seat, "free_moves": state.high_bid or 0}]

    def _choose_pattern(self, state: MindNinjaState, seat: int, action: ChoosePattern) -> list[Event]:
        self._phase(state, "pattern", "choose_pattern")
        return [{"type": "pattern_chosen", "seat": seat, "pattern": normalise_pattern(action.pattern, state.side)}]

    def _cell(self, state: MindNinjaState, cell: tuple[int, int], what: str) -> int:
        q, r = cell
        index = state.geometry.index.get((q, r))
        if index is None:
            raise illegal(
                f"{what}: cell [{q},{r}] is off the board (side {state.side}: max(|q|,|r|,|q+r|) <= {state.side - 1})"
            )
        if state.board[index] != ".":
            colour = "red" if state.board[index] == "R" else "blue"
            raise illegal(f"{what}: cell [{q},{r}] is occupied (a {colour} stone)")
        return index

    def _setup(self, state: MindNinjaState, seat: int, action: Setup) -> list[Event]:
        self._phase(state, "setup", "setup")
        placed: dict[int, str] = {}
        for stone in action.stones:
            index = self._cell(state, stone.cell, "setup")
            if index in placed:
                raise illegal(f"setup: cell [{stone.cell[0]},{stone.cell[1]}] is listed twice; cells must be distinct")
            placed[index] = stone.color
        cells = state.geometry.cells
        stones = [{"cell": list(cells[i]), "color": placed[i]} for i in sorted(placed)]
        return [{"type": "stones_set_up", "seat": seat, "stones": stones}]

    def _end_setup(self, state: MindNinjaState, seat: int, action: EndSetup) -> list[Event]:
        self._phase(state, "setup", "end_setup")
        return [{"type": "setup_ended", "seat": seat}]

    def _choose_role(self, state: MindNinjaState, seat: int, action: ChooseRole) -> list[Event]:
        self._phase(state, "roles", "choose_role")
        builder = seat if action.role == "builder" else 1 - seat
        return [{"type": "role_chosen", "seat": seat, "role": action.role, "builder": builder, "blocker": 1 - builder}]

    def _place(self, state: MindNinjaState, seat: int, action: Place) -> list[Event]:
        self._phase(state, "play", "place")
        index = self._cell(state, action.cell, "place")
        if state.chosen.colors == "fixed":
            role, own = ("builder", "red") if seat == state.builder else ("blocker", "blue")
            if action.color != own:
                raise illegal(f"the pattern's colours are fixed: the {role} places {own} stones, not {action.color}")
        return [
            {
                "type": "stone_placed",
                "seat": seat,
                "cell": list(state.geometry.cells[index]),
                "color": action.color,
                "free": state.free_pending,
            }
        ]

    def _decline_free(self, state: MindNinjaState, seat: int, action: DeclineFree) -> list[Event]:
        self._phase(state, "play", "decline_free")
        if not state.free_pending:
            left = (
                f"{state.free_moves} free move(s) left"
                if seat == state.chooser
                else "only the chooser holds free moves"
            )
            raise illegal(
                f"no free move to decline: a free move is offered right after the chooser's own placement ({left})"
            )
        return [{"type": "free_move_declined", "seat": seat, "free_moves_left": state.free_moves - 1}]

    # --- evolve ---------------------------------------------------------------------------------
    def evolve(self, state: MindNinjaState, event: Event) -> MindNinjaState:
        kind = event["type"]
        if kind == "stone_placed":
            return self._evolve_stone(state, event)
        if kind == "free_move_declined":
            return state.evolved(free_moves=state.free_moves - 1, free_pending=False, mover=1 - event["seat"])
        if kind == "bid_made":
            return state.evolved(bids=(*state.bids, (event["seat"], event["value"])))
        if kind == "bidding_closed":
            return state.evolved(
                phase="pattern", chooser=event["chooser"], inventor=event["inventor"], free_moves=event["free_moves"]
            )
        if kind == "pattern_chosen":
            return state.evolved(phase="setup", pattern=pattern_text(event["pattern"]))
        if kind == "stones_set_up":
            return self._evolve_setup(state, event)
        if kind == "setup_ended":
            return state.evolved(phase="roles")
        if kind == "role_chosen":
            return self._end_check(state.evolved(phase="play", builder=event["builder"], mover=event["builder"]), None)
        raise ValueError(f"mind_ninja cannot evolve {kind!r}")

    def _evolve_setup(self, state: MindNinjaState, event: Event) -> MindNinjaState:
        comp, geometry = state.chosen, state.geometry
        board, parent, sizes, masks, formed = state.board, state.parent, state.sizes, state.masks, state.formed
        holes = list(state.holes)
        for stone in event["stones"]:
            cell = geometry.index[tuple(stone["cell"])]
            board, parent, sizes, masks, formed = add_stone(
                comp, geometry, board, parent, sizes, masks, holes, formed, cell, COLOUR_INDEX[stone["color"]]
            )
        return state.evolved(
            board=board,
            parent=parent,
            sizes=sizes,
            masks=masks,
            formed=formed,
            holes=tuple(holes),
            empty=state.empty - len(event["stones"]),
        )

    def _evolve_stone(self, state: MindNinjaState, event: Event) -> MindNinjaState:
        geometry = state.geometry
        q, r = event["cell"]
        cell = geometry.index[(q, r)]
        comp = state.chosen
        holes = list(state.holes)
        board, parent, sizes, masks, formed = add_stone(
            comp,
            geometry,
            state.board,
            state.parent,
            state.sizes,
            state.masks,
            holes,
            state.formed,
            cell,
            COLOUR_INDEX[event["color"]],
        )
        seat = event["seat"]
        changes: dict[str, Any] = {}
        if event["free"]:
            changes.update(free_moves=state.free_moves - 1, free_pending=False, mover=1 - seat)
        elif seat == state.chooser and state.free_moves > 0:
            changes.update(free_pending=True, mover=seat)
        else:
            changes.update(mover=1 - seat)
        placed = state.evolved(
            board=board,
            parent=parent,
            sizes=sizes,
            masks=masks,
            formed=formed,
            holes=tuple(holes),
            empty=state.empty - 1,
            placements=state.placements + 1,
            **changes,
        )
        return self._end_check(placed, cell, comp)

    def _end_check(
        self, state: MindNinjaState, last: int | None, comp: CompiledPattern | None = None
    ) -> MindNinjaState:
        """Formed -> the builder wins; else a full board -> the blocker wins."""
        comp = comp or state.chosen
        if judge(comp, state, state.empty):
            cells = witness(comp, state, last)
            return state.evolved(
                phase="over",
                free_pending=False,
                winner=state.builder,
                reason="pattern_formed",
                win_cells=None if cells is None else tuple(cells),
            )
        if state.empty == 0:
            assert state.builder is not None, "roles are chosen before play"
            return state.evolved(phase="over", free_pending=False, winner=1 - state.builder, reason="board_full")
        return state

    # --- end, views -------------------------------------------------------------------------------
    def outcome(self, state: MindNinjaState) -> dict[str, Any] | None:
        if state.phase != "over":
            return None
        cells = state.geometry.cells
        assert state.builder is not None, "a match over in the play phase has its roles"
        return {
            "winner": state.winner,
            "reason": state.reason,
            "scores": {
                "pattern": state.chosen.id,
                "builder": state.builder,
                "blocker": 1 - state.builder,
                "cells": None if state.win_cells is None else [list(cells[i]) for i in state.win_cells],
            },
        }

    def view(self, state: MindNinjaState, seat: int | None) -> dict[str, Any]:
        comp = state.compiled
        builder = state.builder
        return {
            "side": state.side,
            "phase": state.phase,
            "bids": [[s, v] for s, v in state.bids],
            "high_bid": state.high_bid,
            "chooser": state.chooser,
            "inventor": state.inventor,
            "free_moves": state.free_moves,
            "free_pending": state.free_pending,
            "pattern": None if comp is None else comp.normalised,
            "builder": builder,
            "blocker": None if builder is None else 1 - builder,
            "board": state.board,
        }

    # --- action lists -------------------------------------------------------------------------------
    def legal_actions(self, state: MindNinjaState, seat: int) -> Iterator[dict[str, Any]]:
        """Every legal action, except multi-stone setups and custom / parametrised patterns
        (infinitely many): those are legal but not listed."""
        if seat not in self.to_move(state):
            return
        phase, cells = state.phase, state.geometry.cells
        if phase == "bidding":
            low = 0 if state.high_bid is None else state.high_bid + 1
            for value in range(low, cell_count(state.side) + 1):
                yield {"type": "bid", "value": value}
            yield {"type": "pass"}
        elif phase == "pattern":
            for pattern_id in CATALOGUE_IDS:
                yield {"type": "choose_pattern", "pattern": {"id": pattern_id}}
        elif phase == "setup":
            for i, c in enumerate(state.board):
                if c == ".":
                    for colour in COLOURS:
                        yield {"type": "setup", "stones": [{"cell": list(cells[i]), "color": colour}]}
            yield {"type": "end_setup"}
        elif phase == "roles":
            yield {"type": "choose_role", "role": "builder"}
            yield {"type": "choose_role", "role": "blocker"}
        elif phase == "play":
            colours = self._colours(state, seat)
            for i, c in enumerate(state.board):
                if c == ".":
                    for colour in colours:
                        yield {"type": "place", "cell": list(cells[i]), "color": colour}
            if state.free_pending:
                yield {"type": "decline_free"}

    def _colours(self, state: MindNinjaState, seat: int) -> tuple[str, ...]:
        if state.chosen.colors == "either":
            return COLOURS
        return ("red",) if seat == state.builder else ("blue",)

    def random_action(self, state: MindNinjaState, seat: int, rng: random.Random) -> dict[str, Any] | None:
        """A random legal action that keeps playouts short: low bids, a random catalogue pattern
        (sometimes with a param override), a few setup stones."""
        if seat not in self.to_move(state):
            return None
        phase, cells = state.phase, state.geometry.cells
        if phase == "bidding":
            high = state.high_bid
            if rng.random() < 0.5 or (high is not None and high >= min(6, cell_count(state.side))):
                return {"type": "pass"}
            return {"type": "bid", "value": (0 if high is None else high + 1) + rng.randint(0, 1)}
        if phase == "pattern":
            pattern_id = rng.choice(CATALOGUE_IDS)
            pattern: dict[str, Any] = {"id": pattern_id}
            if rng.random() < 0.25:
                pattern["params"] = random_params(pattern_id, state.side, rng)
            return {"type": "choose_pattern", "pattern": pattern}
        empty = [i for i, c in enumerate(state.board) if c == "."]
        if phase == "setup":
            if not empty or rng.random() < 0.4:
                return {"type": "end_setup"}
            chosen = rng.sample(empty, min(len(empty), rng.randint(1, 3)))
            return {"type": "setup", "stones": [{"cell": list(cells[i]), "color": rng.choice(COLOURS)} for i in chosen]}
        if phase == "roles":
            return {"type": "choose_role", "role": rng.choice(("builder", "blocker"))}
        if phase == "play":
            if state.free_pending and rng.random() < 0.3:
                return {"type": "decline_free"}
            return {
                "type": "place",
                "cell": list(cells[rng.choice(empty)]),
                "color": rng.choice(self._colours(state, seat)),
            }
        return None

    # --- text -----------------------------------------------------------------------------------------
    def render(self, state: MindNinjaState) -> str:
        comp = state.compiled
        shown = state.board
        if state.win_cells:
            marked = list(shown)
            for i in state.win_cells:
                marked[i] = marked[i].lower()
            shown = "".join(marked)
        lines = [state.geometry.render(shown)]
        info = [f"phase {state.phase}"]
        if state.bids:
            info.append("bids " + ", ".join(f"seat {s}: {v}" for s, v in state.bids))
        if state.chooser is not None:
            info.append(
                f"chooser seat {state.chooser} ({state.free_moves} free move(s) left"
                + (", one pending" if state.free_pending else "")
                + f"), inventor seat {state.inventor}"
            )
        if comp is not None:
            info.append(f"pattern {comp.id} ({comp.colors} colours)")
        if state.builder is not None:
            info.append(f"builder seat {state.builder}, blocker seat {1 - state.builder}")
        if state.phase == "over":
            info.append(
                f"{state.reason}: seat {state.winner} wins" + (" (lower case: the pattern)" if state.win_cells else "")
            )
        lines.append(" · ".join(info))
        return "\n".join(lines)


def random_params(pattern_id: str, side: int, rng: random.Random) -> dict[str, Any]:
    """A valid random param override for a catalogue pattern."""
    colour = rng.choice(("red", "blue", "any"))
    if pattern_id == "five_in_a_row":
        return {"n": rng.randint(3, min(6, 2 * side - 1))}
    if pattern_id == "havannah":
        return {"sides": rng.randint(2, 4)}
    if pattern_id == "hex":
        return {"mode": "any", "edges": rng.randint(2, 4)}
    if pattern_id == "y":
        return {"color": colour}
    if pattern_id == "big_group":
        return {"size": rng.randint(3, cell_count(side) // 3)}
    if pattern_id == "odd":
        return {"k": rng.randint(2, 6)}
    if pattern_id in ("ring", "triangle", "flower"):
        return {"color": colour}
    return {}


DECIDERS: dict[str, Callable[[MindNinja, MindNinjaState, int, Any], list[Event]]] = {
    "bid": MindNinja._bid,
    "pass": MindNinja._pass,
    "choose_pattern": MindNinja._choose_pattern,
    "setup": MindNinja._setup,
    "end_setup": MindNinja._end_setup,
    "choose_role": MindNinja._choose_role,
    "place": MindNinja._place,
    "decline_free": MindNinja._decline_free,
}

GAME = MindNinja()
