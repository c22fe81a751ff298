"""Strands hooks for the generic game properties."""

from __future__ import annotations

import random

from games.strands import StrandsState


def candidate(board: StrandsState, seat: int, rng: random.Random) -> dict:
    """Random placements: same-number sets around the legal size, mixed numbers, occupied,
    duplicated or off-board cells."""
    geometry = board.geometry
    kind = rng.random()
    if kind < 0.6:
        number = rng.randint(1, 6)
        pool = [i for i in range(geometry.size) if board.numbers[i] == str(number) and board.board[i] == "."]
        if pool:
            cells = rng.sample(pool, min(len(pool), rng.randint(1, number + 1)))
            return {"type": "place", "cells": [list(geometry.cells[i]) for i in cells]}
    if kind < 0.7:
        i = rng.randrange(geometry.size)
        return {"type": "place", "cells": [list(geometry.cells[i])] * 2}
    if kind < 0.8:
        return {"type": "place", "cells": [[board.side + 2, 0]]}
    cells = rng.sample(range(geometry.size), rng.randint(1, 3))
    return {"type": "place", "cells": [list(geometry.cells[i]) for i in cells]}


def canonical(action: dict) -> tuple:
    return (action["type"], tuple(sorted(tuple(c) for c in action["cells"])))
