"""The game diagrams of the docs site, drawn as SVG from the games' own code at build time.

Nothing here is a copy of a rule: the Strands numbers come from the layouts file the rules read,
Mana's marks from `games.mana.MARKS`, and the Mind Ninja pattern is formed by folding a match
through `games.fold` and drawing the cells its outcome names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from games.fold import Replayer
from games.hexgrid import hex_board
from games.mana import MARKS
from games.playout import move_record
from games.strands import LAYOUTS_FILE

Cell = tuple[int, int]
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'
# Okabe–Ito colours, as the web client uses them.
NUMBER_FILL = {1: "#ffffff", 2: "#f0f0f0", 3: "#d9ecf7", 4: "#cfe8d8", 5: "#f6e3c4", 6: "#f3cfe0"}
RED, BLUE, AMBER = "#d55e00", "#0072b2", "#e69f00"


def _hex_points(x: float, y: float, size: float) -> str:
    """The corners of a pointy-top hexagon around (x, y)."""
    corners = []
    for k in range(6):
        angle = math.radians(60 * k - 30)
        corners.append(f"{x + size * math.cos(angle):.1f},{y + size * math.sin(angle):.1f}")
    return " ".join(corners)


def _hex_centre(cell: Cell, size: float, side: int) -> tuple[float, float]:
    q, r = cell
    n = side - 1
    width = math.sqrt(3) * size
    x = width * (q + r / 2) + width * (n + 0.5) + size * 0.2
    y = 1.5 * size * r + 1.5 * size * n + size * 1.2
    return x, y


def hex_svg(side: int, fill: Callable[[int], str], label: Callable[[int], str], title: str, size: float = 22) -> str:
    """A hexhex board of `side`: each cell i filled with fill(i) and labelled label(i)."""
    board = hex_board(side)
    width = math.sqrt(3) * size * (2 * side - 1) + size * 0.4
    height = 1.5 * size * (2 * side - 2) + size * 2.4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" role="img" aria-label="{title}">',
        f"<title>{title}</title>",
    ]
    for i, cell in enumerate(board.cells):
        x, y = _hex_centre(cell, size, side)
        parts.append(f'<polygon points="{_hex_points(x, y, size)}" fill="{fill(i)}" stroke="#555" stroke-width="1"/>')
        text = label(i)
        if text:
            colour = "#fff" if fill(i) in (RED, BLUE) else "#222"
            parts.append(
                f'<text x="{x:.1f}" y="{y + size * 0.28:.1f}" text-anchor="middle" font-size="{size * 0.72:.0f}" '
                f'{FONT} fill="{colour}">{text}</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def strands_layout(layout_id: str) -> str:
    """A Strands layout: every cell with its number, shaded by number."""
    layout = json.loads(Path(LAYOUTS_FILE).read_text())["layouts"][layout_id]
    numbers = [int(ch) for ch in "".join(layout["rows"])]
    return hex_svg(
        layout["side"],
        lambda i: NUMBER_FILL[numbers[i]],
        lambda i: str(numbers[i]),
        f"Strands layout {layout_id}: the number on every cell",
    )


def mana_board() -> str:
    """Mana's 6×6 board, Black's side at the bottom: each square's marks as pips and a number."""
    size, margin = 56, 28
    shade = {1: "#ffffff", 2: "#e8e8e8", 3: "#c8c8c8"}
    edge = margin + 6 * size + margin
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {edge} {edge}" width="{edge}" height="{edge}" '
        'role="img" aria-label="The Mana board and the marks of its squares">',
        "<title>The Mana board: the marks of every square (a1 bottom left, Black's back row at the bottom)</title>",
    ]
    for index, marks in enumerate(MARKS):
        file, rank = index % 6, index // 6  # index = (rank - 1) * 6 + file
        x, y = margin + file * size, margin + (5 - rank) * size
        parts.append(f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{shade[int(marks)]}" stroke="#555"/>')
        for pip in range(int(marks)):
            cx = x + size / 2 + (pip - (int(marks) - 1) / 2) * 13
            parts.append(f'<circle cx="{cx:.1f}" cy="{y + size * 0.62:.1f}" r="4.5" fill="#333"/>')
        parts.append(
            f'<text x="{x + 5}" y="{y + 14}" font-size="11" {FONT} fill="#555">{"abcdef"[file]}{rank + 1}</text>'
        )
    for k in range(6):
        parts.append(
            f'<text x="{margin + k * size + size / 2}" y="{edge - 8}" text-anchor="middle" font-size="13" '
            f"{FONT}>{'abcdef'[k]}</text>"
        )
        parts.append(
            f'<text x="{margin / 2}" y="{margin + (5 - k) * size + size / 2 + 5}" text-anchor="middle" '
            f'font-size="13" {FONT}>{k + 1}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _mind_ninja_ring_match() -> tuple[int, str, list[list[int]]]:
    """A side-5 match of the `havannah` pattern folded to its end: seat 1 (the inventor) sets up
    five red stones around the centre, seat 0 (the chooser) takes the builder's role and closes
    the ring. Returns the side, the final board string and the cells the outcome names."""
    match, replayer, at = "docs-ring", Replayer(), 1_795_989_600_000
    ring = [[1, 0], [1, -1], [0, -1], [-1, 0], [-1, 1]]
    actions: list[tuple[str, dict[str, Any]]] = [
        ("ann", {"type": "create", "game": "mind_ninja", "seats": ["ann", "ben"], "options": {"side": 5}}),
        ("ann", {"type": "pass"}),
        ("ben", {"type": "choose_pattern", "pattern": {"id": "havannah"}}),
        ("ben", {"type": "setup", "stones": [{"cell": cell, "color": "red"} for cell in ring]}),
        ("ben", {"type": "end_setup"}),
        ("ann", {"type": "choose_role", "role": "builder"}),
        ("ann", {"type": "place", "cell": [0, 1], "color": "red"}),
    ]
    step = None
    for number, (player, action) in enumerate(actions, start=1):
        step = replayer.feed(move_record(match, player, action, f"e-{number}", at + number * 1000))
        if step.result["status"] != "accepted":
            raise RuntimeError(f"the Mind Ninja example was rejected at {action}: {step.result['reason']}")
    assert step is not None and step.outcome is not None, "the Mind Ninja example did not end"
    view = step.result["view"]
    scores = step.outcome["outcome"]["scores"]
    return view["side"], view["board"], scores["cells"]


def mind_ninja_pattern() -> str:
    """The `havannah` pattern formed as a ring: the witness cells ringed in amber."""
    side, board, cells = _mind_ninja_ring_match()
    geometry = hex_board(side)
    formed = {geometry.index[(q, r)] for q, r in cells}
    corners = set(geometry.corners)

    def fill(i: int) -> str:
        return {"R": RED, "B": BLUE}.get(board[i], "#fff7e0" if i in formed else "#ffffff")

    def label(i: int) -> str:
        if board[i] != ".":
            return board[i]
        return "★" if i in formed else ("c" if i in corners else "")

    return hex_svg(side, fill, label, "Mind Ninja, side 5: a red ring (havannah) around the centre cell")


def all_diagrams() -> dict[str, str]:
    """Site path -> SVG text."""
    return {
        "rules/img/strands-classic-6.svg": strands_layout("classic-6"),
        "rules/img/strands-small-4.svg": strands_layout("small-4"),
        "rules/img/mana-board.svg": mana_board(),
        "rules/img/mind-ninja-ring.svg": mind_ninja_pattern(),
    }
