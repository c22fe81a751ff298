"""The codes a Mastermind codebreaker still considers: exactly (the game's own
`consistent_codes`, for spaces it can enumerate) or as a sample drawn by a randomised
constraint search (8 pegs × 10 colours is 10^8 codes: no list, no filter).

`Key` is the game's `Settings.key`: (pegs, colours, repeats, max_distinct).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from games.mastermind import DIGITS, consistent_codes, feedback, space_size

Key = tuple[int, int, bool, int | None]
Rows = tuple[tuple[str, int, int], ...]
EXACT_SPACE = 50_000  # spaces up to this size are enumerated and filtered exactly...
ENUMERATION_LIMIT = 200_000  # ...when listing them walks at most this many codes (max_distinct filters a product)
SAMPLE_NODES = 12_000  # search steps the sampler may take to collect codes (a work budget, not a clock)
FIRST_CODE_NODES = 400_000  # ... and to find the first one, which always exists when the answers were true


@dataclass(frozen=True)
class Candidates:
    codes: tuple[str, ...]  # the consistent codes (all of them when `exact`), lexicographic
    exact: bool


def enumerable(key: Key) -> bool:
    pegs, colors, repeats, max_distinct = key
    walked = colors**pegs if repeats and max_distinct is not None else space_size(key)
    return space_size(key) <= EXACT_SPACE and walked <= ENUMERATION_LIMIT


def consistent(key: Key, rows: Rows, rng: random.Random, want: int) -> Candidates:
    """The codes that would have answered every row as it was answered."""
    if enumerable(key):
        return Candidates(consistent_codes(key, rows), True)
    found, complete = sample_consistent(key, rows, rng, want)
    return Candidates(tuple(sorted(found)), complete)


def sample_consistent(
    key: Key,
    rows: Rows,
    rng: random.Random,
    want: int,
    max_nodes: int = SAMPLE_NODES,
    first_nodes: int = FIRST_CODE_NODES,
) -> tuple[set[str], bool]:
    """Up to `want` distinct consistent codes, each found by a depth-first search with
    random colour orders that prunes a partial code as soon as some row's black or
    black + white count can no longer come out right. Returns (codes, complete): complete
    when a search ran dry without finding any (the rows contradict each other)."""
    pegs, colors, repeats, max_distinct = key
    limit = max_distinct if max_distinct is not None else pegs
    rules = [(guess, black, black + white, [guess.count(c) for c in DIGITS[:colors]]) for guess, black, white in rows]
    found: set[str] = set()
    nodes = 0
    duplicates = 0
    while len(found) < want and nodes < (max_nodes if found else first_nodes) and duplicates < 20:
        code: list[str] = []
        used = [0] * colors
        state = [[0, 0] for _ in rules]  # per row: blacks, hits (shared colour pegs) so far
        orders = [rng.sample(range(colors), colors) for _ in range(pegs)]

        def extend(position: int) -> bool:
            nonlocal nodes
            if position == pegs:
                return True
            left = pegs - position - 1
            for colour in orders[position]:
                nodes += 1
                if used[colour] and not repeats:
                    continue
                if not used[colour] and sum(1 for u in used if u) >= limit:
                    continue
                if not _fits(rules, state, position, colour, used, left):
                    continue
                _place(rules, state, position, colour, used, +1)
                code.append(DIGITS[colour])
                if extend(position + 1):
                    return True
                code.pop()
                _place(rules, state, position, colour, used, -1)
                if nodes >= (max_nodes if found else first_nodes):
                    return False
            return False

        if not extend(0):
            return found, not found and nodes < first_nodes  # ran dry: no consistent code at all
        text = "".join(code)
        duplicates = duplicates + 1 if text in found else 0
        found.add(text)
    return found, False


def _fits(rules, state, position: int, colour: int, used: list[int], left: int) -> bool:
    digit = DIGITS[colour]
    for (guess, black, hits, counts), (blacks, shared) in zip(rules, state, strict=False):
        blacks += guess[position] == digit
        shared += used[colour] < counts[colour]
        if blacks > black or shared > hits or blacks + left < black or shared + left < hits:
            return False
    return True


def _place(rules, state, position: int, colour: int, used: list[int], step: int) -> None:
    digit = DIGITS[colour]
    if step < 0:
        used[colour] -= 1
    for (guess, _, _, counts), counters in zip(rules, state, strict=False):
        counters[0] += step * (guess[position] == digit)
        counters[1] += step * (used[colour] < counts[colour])
    if step > 0:
        used[colour] += 1


def answers_all(code: str, rows: Rows) -> bool:
    return all(feedback(code, guess) == (black, white) for guess, black, white in rows)


def canonical_guesses(key: Key) -> list[str]:
    """One guess per shape up to renaming colours and reordering pegs (for P = 4 with repeats:
    0000, 0001, 0011, 0012, 0123): all a first guess needs to consider."""
    pegs, colors, repeats, max_distinct = key
    limit = min(colors, pegs if max_distinct is None else max_distinct)
    if not repeats:
        return [DIGITS[:pegs]]
    shapes: list[list[int]] = []

    def split(rest: int, largest: int, parts: list[int]) -> None:
        if rest == 0:
            if len(parts) <= limit:
                shapes.append(parts)
            return
        for size in range(min(rest, largest), 0, -1):
            split(rest - size, size, [*parts, size])

    split(pegs, pegs, [])
    return sorted("".join(DIGITS[i] * size for i, size in enumerate(shape)) for shape in shapes)
