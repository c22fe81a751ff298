// Hexhex boards (Strands, Mind Ninja): canonical cell order and SVG drawing.
// Canonical order (docs/rules/index.md): rows r = -(N-1)..N-1; in a row q ascending from
// max(-(N-1), -(N-1)-r). Board strings in views follow it, one character per cell.

import { boardKeys, cellGroup, s } from "./ui.js";

export function hexCells(side) {
  const n = side - 1;
  const cells = [];
  for (let r = -n; r <= n; r++) {
    for (let q = Math.max(-n, -n - r); q <= Math.min(n, n - r); q++) cells.push([q, r]);
  }
  return cells;
}

export const cellKey = ([q, r]) => `${q},${r}`;

const SQRT3 = Math.sqrt(3);

/** Pointy-top pixel centre of an axial cell for a hexagon of circumradius `size`. */
function centre([q, r], size) {
  return [size * SQRT3 * (q + r / 2), size * 1.5 * r];
}

function hexPoints(x, y, size) {
  const points = [];
  for (let k = 0; k < 6; k++) {
    const angle = (Math.PI / 180) * (60 * k - 30);
    points.push(`${(x + size * Math.cos(angle)).toFixed(2)},${(y + size * Math.sin(angle)).toFixed(2)}`);
  }
  return points.join(" ");
}

/**
 * An SVG hex board. `drawCell(group, cell, index, x, y, size)` fills each cell's group (the
 * hexagon itself is drawn first, with class `hex`); `cellInfo(cell, index)` returns
 * {label, onActivate, class} for the cell (onActivate null: not clickable).
 */
export function hexBoard({ side, title, cellInfo, drawCell, size = 24 }) {
  const cells = hexCells(side);
  const extent = size * SQRT3 * (side - 0.5) + 4;
  const height = size * (1.5 * (side - 1) + 1) + 4;
  const svg = s("svg", {
    class: "board hexboard", viewBox: `${-extent} ${-height} ${2 * extent} ${2 * height}`, role: "group",
    style: `max-width: ${Math.round(4.4 * extent)}px`,
    "aria-label": title,
  });
  svg.append(s("title", {}, title));
  cells.forEach((cell, index) => {
    const [x, y] = centre(cell, size);
    const info = cellInfo(cell, index);
    const group = cellGroup(cellKey(cell), info.label, info.onActivate, { class: info.class });
    group.append(s("polygon", { class: "hex", points: hexPoints(x, y, size * 0.97) }));
    drawCell(group, cell, index, x, y, size);
    svg.append(group);
  });
  boardKeys(svg);
  return svg;
}
