'use strict';
// Strands for boardgame.io: the game plylog's `peer` benchmark plays on the peer server.
//
// The board is plylog's classic-6 layout (games/data/strands-layouts.json): a hexhex board of side 6,
// 91 cells in plylog's canonical order (rows r = -5..5, q ascending within a row), so cell i here is
// cell i of a plylog board string. A cell's number depends on its ring: the centre 1, rings 1-3 2,
// ring 4 3, the edge 5, its six corners 6. A move is `place(cells)` with cells as indices: Black
// ('0') opens with one cell marked 2; after that a turn covers 1..X empty cells all marked X
// (plylog's default `up_to` placement). The board full, the larger group sizes win.

const { INVALID_MOVE } = require('boardgame.io/core');

const SIDE = 6;
const EDGE = SIDE - 1;
const STEPS = [[1, 0], [1, -1], [0, -1], [-1, 0], [-1, 1], [0, 1]];

const cells = [];
const indexOf = new Map();
for (let r = -EDGE; r <= EDGE; r++) {
  for (let q = Math.max(-EDGE, -EDGE - r); q <= Math.min(EDGE, EDGE - r); q++) {
    indexOf.set(`${q},${r}`, cells.length);
    cells.push([q, r]);
  }
}
const SIZE = cells.length;

function markOf([q, r]) {
  const distances = [Math.abs(q), Math.abs(r), Math.abs(q + r)];
  const ring = Math.max(...distances);
  if (ring === 0) return 1;
  if (ring <= 3) return 2;
  if (ring === 4) return 3;
  return distances.filter((d) => d === EDGE).length === 2 ? 6 : 5;
}

const MARKS = cells.map(markOf);
const NEIGHBOURS = cells.map(([q, r]) => STEPS.map(([dq, dr]) => indexOf.get(`${q + dq},${r + dr}`))
  .filter((i) => i !== undefined));

// Group sizes of one player's stones, largest first (a flood fill per group).
function groups(board, player) {
  const seen = new Set();
  const sizes = [];
  board.forEach((owner, start) => {
    if (owner !== player || seen.has(start)) return;
    const todo = [start];
    seen.add(start);
    let size = 0;
    while (todo.length) {
      const cell = todo.pop();
      size += 1;
      for (const next of NEIGHBOURS[cell]) {
        if (board[next] === player && !seen.has(next)) {
          seen.add(next);
          todo.push(next);
        }
      }
    }
    sizes.push(size);
  });
  return sizes.sort((a, b) => b - a);
}

function winner(board) {
  const black = groups(board, '0');
  const white = groups(board, '1');
  for (let i = 0; i < Math.max(black.length, white.length); i++) {
    const difference = (black[i] || 0) - (white[i] || 0);
    if (difference !== 0) return { winner: difference > 0 ? '0' : '1', groups: { 0: black, 1: white } };
  }
  return { draw: true, groups: { 0: black, 1: white } };
}

// One pass, no allocation: the server runs this for every move.
function legal(G, chosen) {
  if (!Array.isArray(chosen) || chosen.length === 0) return false;
  let mark = 0;
  for (let i = 0; i < chosen.length; i++) {
    const c = chosen[i];
    if (!Number.isInteger(c) || c < 0 || c >= SIZE || G.board[c] !== null) return false;
    for (let j = 0; j < i; j++) if (chosen[j] === c) return false;
    if (mark === 0) mark = MARKS[c];
    else if (MARKS[c] !== mark) return false;
  }
  if (G.empty === SIZE) return chosen.length === 1 && mark === 2;
  return chosen.length <= mark;
}

const Strands = {
  name: 'strands',
  minPlayers: 2,
  maxPlayers: 2,
  setup: () => ({ board: new Array(SIZE).fill(null), empty: SIZE }),
  turn: { minMoves: 1, maxMoves: 1 },
  moves: {
    place({ G, ctx }, chosen) {
      if (!legal(G, chosen)) return INVALID_MOVE;
      for (const c of chosen) G.board[c] = ctx.currentPlayer;
      G.empty -= chosen.length;
      return undefined;
    },
  },
  endIf: ({ G }) => (G.empty === 0 ? winner(G.board) : undefined),
};

// A random legal move: a number among those with empty cells, then 1..min(X, free) of its cells.
function randomMove(G, random) {
  const free = new Map();
  G.board.forEach((owner, c) => {
    if (owner !== null || (G.empty === SIZE && MARKS[c] !== 2)) return;
    if (!free.has(MARKS[c])) free.set(MARKS[c], []);
    free.get(MARKS[c]).push(c);
  });
  if (free.size === 0) return null;
  const marks = [...free.keys()];
  const pool = free.get(marks[Math.floor(random() * marks.length)]);
  const most = G.empty === SIZE ? 1 : Math.min(MARKS[pool[0]], pool.length);
  const count = 1 + Math.floor(random() * most);
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, count);
}

module.exports = { Strands, SIZE, MARKS, cells, groups, winner, legal, randomMove };
