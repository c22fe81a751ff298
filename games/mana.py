"""Mana (Claude Leroy; Cosmoludo 2020 edition), as docs/rules/mana.md describes it.

Geometry is precomputed once: for every square, the exact-N-step routes (N = its marks,
no square visited twice) grouped by destination, each route as a bitmask of the squares it
passes over. A destination is reachable when some route's mask misses every blocker, so a
piece's moves cost one AND per route (at most 36 routes), never a path search.

Square index i = (rank - 1) * 6 + file (a = 0), which is also the order of the board string.

Decisions where the rules are silent (see also the report of issue #4):
- The bird goes on a square with no piece; the arrival square holds the moved piece, so it
  is never the bird square. With bird_blocks=false the bird is a pure marker for paths and
  landing, but it still never sits under a piece.
- When no bird square exists (every square with the arrival's mark count is occupied) the
  bird leaves the board: no mana, the next player may move any piece (as before move 1).
- With bird_blocks=true a Ronin may not be dropped on the bird's square (the bird blocks
  landing); with bird_blocks=false it may.
- Passes are not plies; two passes in a row draw with reason "double_pass".
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from typing import Any, Literal

from schemas.mana import MANA_ACTIONS, Drop, ManaOptions, Move, PlaceDaimyo

from .core import Event, Frozen, Game, illegal

FILES = "abcdef"
# Marks per square in board order a1..f1, a2..f2, ..., a6..f6.
MARKS = "322132131312213231231213313132122312"
MARK = tuple(int(c) for c in MARKS)
SQUARES = tuple(f"{FILES[i % 6]}{i // 6 + 1}" for i in range(36))
INDEX = {name: i for i, name in enumerate(SQUARES)}
MARK_MASK = (0, *tuple(sum(1 << i for i in range(36) if MARK[i] == n) for n in (1, 2, 3)))
ALL = (1 << 36) - 1
COLOURS = ("Black", "White")
PIECES = (("D", "R"), ("d", "r"))  # per seat: (Daimyo, Ronin)
PIECE_NAMES = {"D": "Daimyo", "R": "Ronin", "d": "Daimyo", "r": "Ronin"}
BACK_ROW = (0, 5)  # rank index (0-based) of each seat's back row
DAIMYO_SQUARES = (("b1", "c1", "f1"), ("b6", "c6", "f6"))
_MASK_TABLES = (str.maketrans("DRdr.", "11000"), str.maketrans("DRdr.", "00110"))


def _neighbours(i: int) -> tuple[int, ...]:
    rank, file = divmod(i, 6)
    out = []
    for dr, df in ((1, 0), (0, 1), (-1, 0), (0, -1)):
        r, f = rank + dr, file + df
        if 0 <= r < 6 and 0 <= f < 6:
            out.append(r * 6 + f)
    return tuple(out)


NEIGHBOURS = tuple(_neighbours(i) for i in range(36))


@cache
def routes(square: int) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """(destination, masks of the squares passed over) for every exact-N-step route from
    `square`, N = its marks, never visiting a square twice (the start counts as visited)."""
    by_dest: dict[int, set[int]] = {}

    def walk(at: int, visited: int, over: int, left: int) -> None:
        for nxt in NEIGHBOURS[at]:
            if visited >> nxt & 1:
                continue
            if left == 1:
                by_dest.setdefault(nxt, set()).add(over)
            else:
                walk(nxt, visited | 1 << nxt, over | 1 << nxt, left - 1)

    walk(square, 1 << square, 0, MARK[square])
    return tuple((dest, tuple(sorted(masks))) for dest, masks in sorted(by_dest.items()))


ROUTES = tuple(routes(i) for i in range(36))


def bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


@lru_cache(maxsize=8192)
def square_names(mask: int) -> tuple[str, ...]:
    """The names of the squares in a bitmask, in board order (cached: bird choices repeat)."""
    return tuple(SQUARES[i] for i in bits(mask))


def names(mask_or_squares: int | Iterable[int]) -> str:
    squares = bits(mask_or_squares) if isinstance(mask_or_squares, int) else mask_or_squares
    return ", ".join(SQUARES[i] for i in squares)


def masks(board: str) -> tuple[int, int]:
    """Bitmasks of Black's and White's pieces."""
    return (int(board.translate(_MASK_TABLES[0])[::-1], 2), int(board.translate(_MASK_TABLES[1])[::-1], 2))


def reachable(square: int, blockers: int, no_landing: int) -> list[int]:
    """Destinations of the piece on `square`: some route passes only over free squares
    (`blockers`: pieces, and the bird when it blocks) and the end is not in `no_landing`."""
    out = []
    for dest, over in ROUTES[square]:
        if no_landing >> dest & 1:
            continue
        for mask in over:
            if not mask & blockers:
                out.append(dest)
                break
    return out


def can_move(square: int, blockers: int, no_landing: int) -> bool:
    for dest, over in ROUTES[square]:
        if no_landing >> dest & 1:
            continue
        for mask in over:
            if not mask & blockers:
                return True
    return False


class ManaState(Frozen):
    max_plies: int = 300
    bird_blocks: bool = True
    phase: Literal["setup", "play", "over"] = "setup"
    board: str = "." * 36  # a1..f1, a2..f2, ..., a6..f6; D/R Black, d/r White
    bird: str | None = None  # square name; None = off the board (no mana)
    turn: int = 0  # the seat to move
    ply: int = 0  # moves and drops made
    reserves: tuple[int, int] = (0, 0)  # captured Ronin each seat may drop back
    passes: int = 0  # passes in a row
    disobey: bool = True  # the seat to move is free of the mana constraint
    winner: int | None = None
    reason: str | None = None

    @property
    def mana(self) -> int | None:
        return None if self.bird is None else MARK[INDEX[self.bird]]

    def bird_bit(self) -> int:
        """The bird as a blocker (0 when it is off the board or a pure marker)."""
        return 1 << INDEX[self.bird] if self.bird is not None and self.bird_blocks else 0


def free_of_mana(board: str, bird: str | None, seat: int, bird_blocks: bool) -> bool:
    """True when `seat` may disobey: no mana, no own piece on a mana square, or none of
    those can move."""
    if bird is None:
        return True
    b = INDEX[bird]
    own_masks = masks(board)
    own = own_masks[seat]
    bird_bit = 1 << b if bird_blocks else 0
    blockers = own_masks[0] | own_masks[1] | bird_bit
    no_landing = own | bird_bit
    return all(not can_move(square, blockers, no_landing) for square in bits(own & MARK_MASK[MARK[b]]))


def position(
    board: str,
    *,
    bird: str | None = None,
    turn: int = 0,
    reserves: tuple[int, int] = (0, 0),
    ply: int = 0,
    passes: int = 0,
    max_plies: int = 300,
    bird_blocks: bool = True,
) -> ManaState:
    """A play-phase state from a 36-char board string (tests, analysis); the derived
    `disobey` flag is computed."""
    assert len(board) == 36 and set(board) <= set("DRdr."), board
    return ManaState(
        max_plies=max_plies,
        bird_blocks=bird_blocks,
        phase="play",
        board=board,
        bird=bird,
        turn=turn,
        ply=ply,
        reserves=tuple(reserves),
        passes=passes,
        disobey=free_of_mana(board, bird, turn, bird_blocks),
    )


def plural(n: int, word: str = "mark") -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _put(board: str, i: int, c: str) -> str:
    return board[:i] + c + board[i + 1 :]


class Mana(Game):
    name = "mana"
    options_model = ManaOptions
    action_models = MANA_ACTIONS
    state_model = ManaState
    seat_names = COLOURS

    def initial(self, options: dict[str, Any], match_id: str) -> ManaState:
        return ManaState(max_plies=options["max_plies"], bird_blocks=options["bird_blocks"])

    def to_move(self, state: ManaState) -> tuple[int, ...]:
        return () if state.phase == "over" else (state.turn,)

    # --- decide -------------------------------------------------------------------------------
    def decide(self, state: ManaState, seat: int, action: Any, at_ms: int) -> list[Event]:
        return self.execute(state, seat, action, at_ms)[0]

    def execute(self, state: ManaState, seat: int, action: Any, at_ms: int) -> tuple[list[Event], ManaState]:
        if isinstance(action, PlaceDaimyo):
            events = self._decide_place(state, seat, action)
            return events, self.apply(state, events)
        if state.phase == "setup":
            raise illegal(
                f"the Daimyos are not placed yet: {COLOURS[state.turn]} places its Daimyo first "
                f"(place_daimyo on {' or '.join(DAIMYO_SQUARES[state.turn])})"
            )
        if isinstance(action, Move):
            event = self._decide_move(state, seat, action)
        else:
            event = self._decide_drop(state, seat, action)
        return self._with_passes(state, event)

    def _decide_place(self, state: ManaState, seat: int, action: PlaceDaimyo) -> list[Event]:
        if state.phase != "setup":
            raise illegal("the Daimyos are already placed; the game is under way (move or drop)")
        allowed = DAIMYO_SQUARES[seat]
        if action.square not in allowed:
            i = INDEX[action.square]
            where = "not on your back row" if i // 6 != BACK_ROW[seat] else f"a square with {plural(MARK[i])}"
            raise illegal(
                f"{COLOURS[seat]}'s Daimyo goes on a double square of its back row "
                f"({', '.join(allowed)}); {action.square} is {where}"
            )
        return [{"type": "daimyo_placed", "seat": seat, "square": action.square}]

    def _decide_move(self, state: ManaState, seat: int, action: Move) -> Event:
        board = state.board
        start, end = INDEX[action.from_], INDEX[action.to]
        piece = board[start]
        daimyo, ronin = PIECES[seat]
        if piece == ".":
            raise illegal(f"there is no piece on {action.from_}")
        if piece not in (daimyo, ronin):
            raise illegal(
                f"the {PIECE_NAMES[piece]} on {action.from_} is {COLOURS[1 - seat]}'s; you play {COLOURS[seat]}"
            )
        mana = state.mana
        black, white = masks(board)
        own = black if seat == 0 else white
        bird_bit = state.bird_bit()
        blockers, no_landing = black | white | bird_bit, own | bird_bit
        if not state.disobey and MARK[start] != mana:
            assert mana is not None, "a seat that must obey has a mana"
            movable = [s for s in bits(own & MARK_MASK[mana]) if can_move(s, blockers, no_landing)]
            raise illegal(
                f"the mana is {mana} (bird on {state.bird}): you must move a piece standing on a "
                f"{mana}-mark square, and yours on {names(movable)} can move; {action.from_} has "
                f"{plural(MARK[start])}"
            )
        if end not in reachable(start, blockers, no_landing):
            raise illegal(self._unreachable_reason(state, start, end, blockers, no_landing, own))
        target = board[end]
        captured = None if target == "." else ("daimyo" if target in "Dd" else "ronin")
        occupied = (black | white) & ~(1 << start) | 1 << end
        bird = self._check_bird(action.bird, end, occupied, captured == "daimyo")
        return {
            "type": "piece_moved",
            "seat": seat,
            "piece": "daimyo" if piece == daimyo else "ronin",
            "from": action.from_,
            "to": action.to,
            "captured": captured,
            "bird": bird,
        }

    @staticmethod
    def _unreachable_reason(state: ManaState, start: int, end: int, blockers: int, no_landing: int, own: int) -> str:
        n = MARK[start]
        name_from, name_to = SQUARES[start], SQUARES[end]
        rule = f"{name_from} has {plural(n)}, so its piece moves exactly {plural(n, 'step')}"
        now = names(reachable(start, blockers, no_landing)) or "none"
        over = dict(ROUTES[start]).get(end)
        if over is None:
            return (
                f"{rule} (orthogonal, turns allowed, no square twice); {name_to} cannot be reached "
                f"that way (reachable now: {now})"
            )
        if own >> end & 1:
            return (
                f"{name_to} holds your own {PIECE_NAMES[state.board[end]]}; a move lands on an empty "
                f"square or an enemy piece (reachable now: {now})"
            )
        if no_landing >> end & 1:
            return f"the bird on {name_to} blocks landing (option bird_blocks) (reachable now: {now})"
        stops = 0
        for mask in over:
            stops |= mask & blockers
        bird_bit = state.bird_bit()
        parts = []
        if stops & ~bird_bit:
            parts.append(f"pieces on {names(stops & ~bird_bit)}")
        if stops & bird_bit:
            parts.append(f"the bird on {state.bird}")
        return (
            f"every {n}-step path from {name_from} to {name_to} is blocked, by {' and '.join(parts)} "
            f"(reachable now: {now})"
        )

    @staticmethod
    def _check_bird(bird: str | None, arrival: int, occupied: int, daimyo_captured: bool) -> str | None:
        """The bird square of a move or drop landing on `arrival` (board occupancy after it)."""
        n = MARK[arrival]
        if daimyo_captured:
            if bird is not None:
                raise illegal("the bird must be omitted: this move captures the Daimyo and ends the game")
            return None
        free = MARK_MASK[n] & ~occupied
        if not free:
            if bird is not None:
                raise illegal(f"the bird must be omitted: no empty square with {plural(n)} is left")
            return None
        if bird is None:
            raise illegal(
                f"the bird is missing: put it on an empty square with {plural(n)} "
                f"(the count of {SQUARES[arrival]}, where the piece arrives): {names(free)}"
            )
        b = INDEX[bird]
        if MARK[b] != n:
            raise illegal(
                f"the bird must go on a square with {plural(n)} (like "
                f"{SQUARES[arrival]}, where the piece arrives); {bird} has {MARK[b]}"
            )
        if b == arrival:
            raise illegal(
                f"the bird cannot go on {bird}: the piece that arrives there occupies it "
                f"(empty {n}-mark squares: {names(free)})"
            )
        if occupied >> b & 1:
            raise illegal(f"the bird cannot go on {bird}: a piece stands there (empty {n}-mark squares: {names(free)})")
        return bird

    def _decide_drop(self, state: ManaState, seat: int, action: Drop) -> Event:
        if state.reserves[seat] == 0:
            raise illegal("you have no captured Ronin to drop (your reserve is empty)")
        black, white = masks(state.board)
        own = black if seat == 0 else white
        bird_bit = state.bird_bit()
        if not state.disobey:
            mana = state.mana
            assert mana is not None, "a seat that must obey has a mana"
            movable = [s for s in bits(own & MARK_MASK[mana]) if can_move(s, black | white | bird_bit, own | bird_bit)]
            raise illegal(
                f"you may not drop: the mana is {mana} (bird on {state.bird}) and your pieces on "
                f"{names(movable)} can obey it; a drop is allowed only when disobeying"
            )
        end = INDEX[action.to]
        if state.board[end] != ".":
            raise illegal(
                f"{action.to} is occupied by a {PIECE_NAMES[state.board[end]]}; a Ronin is dropped on an empty square"
            )
        if bird_bit >> end & 1:
            raise illegal(f"the bird on {action.to} blocks the drop (option bird_blocks)")
        bird = self._check_bird(action.bird, end, black | white | 1 << end, False)
        return {"type": "ronin_dropped", "seat": seat, "to": action.to, "bird": bird}

    def _with_passes(self, state: ManaState, event: Event) -> tuple[list[Event], ManaState]:
        """The action's event, plus `turn_passed` for each seat that then has no legal action;
        and the state they lead to."""
        events = [event]
        after = self.evolve(state, event)
        while after.phase == "play" and not self.has_action(after):
            passed: Event = {"type": "turn_passed", "seat": after.turn}
            events.append(passed)
            after = self.evolve(after, passed)
        return events, after

    @staticmethod
    def has_action(state: ManaState) -> bool:
        """Whether the seat to move has any legal move or drop."""
        if not state.disobey or state.reserves[state.turn] > 0:
            return True  # a free player with a reserve can always drop (24+ squares are empty)
        black, white = masks(state.board)
        own = black if state.turn == 0 else white
        bird_bit = state.bird_bit()
        blockers, no_landing = black | white | bird_bit, own | bird_bit
        return any(can_move(s, blockers, no_landing) for s in bits(own))

    # --- evolve -------------------------------------------------------------------------------
    def evolve(self, state: ManaState, event: Event) -> ManaState:
        kind = event["type"]
        if kind == "piece_moved":
            return self._evolve_move(state, event)
        if kind == "ronin_dropped":
            seat = event["seat"]
            reserves = (
                (state.reserves[0] - 1, state.reserves[1]) if seat == 0 else (state.reserves[0], state.reserves[1] - 1)
            )
            board = _put(state.board, INDEX[event["to"]], PIECES[seat][1])
            return self._after_ply(state, board, event["bird"], seat, reserves)
        if kind == "turn_passed":
            seat = 1 - event["seat"]
            passes = state.passes + 1
            if passes >= 2:
                return state.evolved(turn=seat, passes=passes, phase="over", winner=None, reason="double_pass")
            return state.evolved(
                turn=seat, passes=passes, disobey=free_of_mana(state.board, state.bird, seat, state.bird_blocks)
            )
        if kind == "daimyo_placed":
            seat = event["seat"]
            daimyo, ronin = PIECES[seat]
            row_start = BACK_ROW[seat] * 6
            row = "".join(daimyo if SQUARES[i] == event["square"] else ronin for i in range(row_start, row_start + 6))
            board = state.board[:row_start] + row + state.board[row_start + 6 :]
            if seat == 0:
                return state.evolved(board=board, turn=1)
            return state.evolved(board=board, turn=0, phase="play", disobey=True)
        raise ValueError(f"mana cannot evolve {kind!r}")

    def _evolve_move(self, state: ManaState, event: Event) -> ManaState:
        seat = event["seat"]
        start, end = INDEX[event["from"]], INDEX[event["to"]]
        board = state.board
        target = board[end]
        board = _put(_put(board, end, board[start]), start, ".")
        reserves = state.reserves
        if target in "Rr":
            reserves = (reserves[0] + 1, reserves[1]) if seat == 1 else (reserves[0], reserves[1] + 1)
        if target in "Dd":
            return state.evolved(
                board=board,
                bird=event["bird"],
                reserves=reserves,
                ply=state.ply + 1,
                passes=0,
                turn=1 - seat,
                phase="over",
                winner=seat,
                reason="daimyo_captured",
            )
        return self._after_ply(state, board, event["bird"], seat, reserves)

    @staticmethod
    def _after_ply(state: ManaState, board: str, bird: str | None, seat: int, reserves: tuple[int, int]) -> ManaState:
        ply = state.ply + 1
        if ply >= state.max_plies:
            return state.evolved(
                board=board,
                bird=bird,
                reserves=reserves,
                ply=ply,
                passes=0,
                turn=1 - seat,
                phase="over",
                winner=None,
                reason="ply_limit",
            )
        return state.evolved(
            board=board,
            bird=bird,
            reserves=reserves,
            ply=ply,
            passes=0,
            turn=1 - seat,
            disobey=free_of_mana(board, bird, 1 - seat, state.bird_blocks),
        )

    # --- end, views ---------------------------------------------------------------------------
    def outcome(self, state: ManaState) -> dict[str, Any] | None:
        if state.phase != "over":
            return None
        return {"winner": state.winner, "reason": state.reason, "scores": None}

    def view(self, state: ManaState, seat: int | None) -> dict[str, Any]:
        return {
            "board": state.board,
            "marks": MARKS,
            "bird": state.bird,
            "mana": state.mana,
            "reserves": list(state.reserves),
            "phase": state.phase,
            "ply": state.ply,
            "max_plies": state.max_plies,
            "bird_blocks": state.bird_blocks,
            "disobey": state.disobey if state.phase == "play" else None,
            "passes": state.passes,
        }

    # --- enumeration --------------------------------------------------------------------------
    def _options(self, state: ManaState, seat: int) -> tuple[list[tuple[int, int]], list[int], int]:
        """(moves as (from, to), drop squares, occupancy) of the seat to move, birds aside."""
        black, white = masks(state.board)
        own = black if seat == 0 else white
        occupied = black | white
        bird_bit = state.bird_bit()
        blockers, no_landing = occupied | bird_bit, own | bird_bit
        pieces = own if state.disobey or state.mana is None else own & MARK_MASK[state.mana]
        moves = [(s, d) for s in bits(pieces) for d in reachable(s, blockers, no_landing)]
        drops = list(bits(ALL & ~(occupied | bird_bit))) if state.disobey and state.reserves[seat] else []
        return moves, drops, occupied

    def legal_actions(self, state: ManaState, seat: int) -> Iterator[dict[str, Any]]:
        if state.phase == "over" or seat != state.turn:
            return
        if state.phase == "setup":
            for square in DAIMYO_SQUARES[seat]:
                yield {"type": "place_daimyo", "square": square}
            return
        moves, drops, occupied = self._options(state, seat)
        board = state.board
        for start, end in moves:
            frm, to = SQUARES[start], SQUARES[end]
            if board[end] in "Dd":
                yield {"type": "move", "from": frm, "to": to}
                continue
            free = MARK_MASK[MARK[end]] & ~(occupied & ~(1 << start) | 1 << end)
            if not free:
                yield {"type": "move", "from": frm, "to": to}
            for bird in square_names(free):
                yield {"type": "move", "from": frm, "to": to, "bird": bird}
        for end in drops:
            to = SQUARES[end]
            free = MARK_MASK[MARK[end]] & ~(occupied | 1 << end)
            if not free:
                yield {"type": "drop", "to": to}
            for bird in square_names(free):
                yield {"type": "drop", "to": to, "bird": bird}

    def random_action(self, state: ManaState, seat: int, rng: random.Random) -> dict[str, Any] | None:
        """A uniformly chosen move or drop (then a uniformly chosen bird square): no bird
        expansion, so it costs one move generation."""
        if state.phase == "over" or seat != state.turn:
            return None
        if state.phase == "setup":
            return {"type": "place_daimyo", "square": rng.choice(DAIMYO_SQUARES[seat])}
        moves, drops, occupied = self._options(state, seat)
        pick = rng.randrange(len(moves) + len(drops))
        if pick < len(moves):
            start, end = moves[pick]
            action = {"type": "move", "from": SQUARES[start], "to": SQUARES[end]}
            if state.board[end] in "Dd":
                return action
            free = MARK_MASK[MARK[end]] & ~(occupied & ~(1 << start) | 1 << end)
        else:
            end = drops[pick - len(moves)]
            action = {"type": "drop", "to": SQUARES[end]}
            free = MARK_MASK[MARK[end]] & ~(occupied | 1 << end)
        if free:
            action["bird"] = SQUARES[rng.choice(list(bits(free)))]
        return action

    def render(self, state: ManaState) -> str:
        lines = ["     a  b  c  d  e  f"]
        for rank in range(5, -1, -1):
            cells = []
            for i in range(rank * 6, rank * 6 + 6):
                c = state.board[i]
                if c == "." and state.bird == SQUARES[i]:
                    c = "*"
                cells.append(MARKS[i] + c)
            lines.append(f"  {rank + 1}  " + " ".join(cells))
        mana = "none" if state.mana is None else f"{state.mana} (bird on {state.bird})"
        status = (
            f"ply {state.ply}/{state.max_plies} · mana {mana} · reserves Black {state.reserves[0]}, "
            f"White {state.reserves[1]}"
        )
        if state.phase == "setup":
            status += f" · setup: {COLOURS[state.turn]} places its Daimyo"
        elif state.phase == "play":
            status += f" · {COLOURS[state.turn]} to move" + (" (free to disobey)" if state.disobey else "")
        if not state.bird_blocks:
            status += " · bird does not block"
        return (
            "\n".join(lines) + "\n" + status + "\n  (digit = marks; D/R Black Daimyo/Ronin, d/r White, * bird, . empty)"
        )


GAME = Mana()
