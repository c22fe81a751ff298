'use strict';
// The peer's Strands against plylog's rules: `npm test` (node's test runner).
const test = require('node:test');
const assert = require('node:assert');
const { Strands, SIZE, MARKS, cells, legal, winner, randomMove } = require('./strands');

test('the board is plylog classic-6, in canonical order', () => {
  assert.strictEqual(SIZE, 91);
  const rows = ['655556', '5333335', '53222235', '532222235', '5322222235', '63222122236',
    '5322222235', '532222235', '53222235', '5333335', '655556'];
  assert.strictEqual(MARKS.join(''), rows.join(''));
  assert.deepStrictEqual(cells[0], [0, -5]);
});

test('the opening is one cell marked 2; later turns cover 1..X cells marked X', () => {
  const G = Strands.setup();
  const two = MARKS.indexOf(2);
  assert.ok(legal(G, [two]));
  assert.ok(!legal(G, [MARKS.indexOf(1)]));
  const afterOpening = { board: G.board.map((v, i) => (i === two ? '0' : v)), empty: SIZE - 1 };
  const threes = MARKS.map((m, i) => [m, i]).filter(([m]) => m === 3).map(([, i]) => i);
  assert.ok(legal(afterOpening, threes.slice(0, 3)));
  assert.ok(!legal(afterOpening, threes.slice(0, 4)));
  assert.ok(!legal(afterOpening, [two]));
  assert.ok(!legal(afterOpening, [threes[0], threes[0]]));
});

test('random moves are legal and fill the board; the larger groups win', () => {
  let state = Strands.setup();
  let player = '0';
  let random = 0.5;
  const next = () => { random = (random * 9301 + 49297) % 233280 / 233280; return random; };
  while (state.empty > 0) {
    const move = randomMove(state, next);
    assert.ok(legal(state, move));
    for (const c of move) state.board[c] = player;
    state = { board: state.board, empty: state.empty - move.length };
    player = player === '0' ? '1' : '0';
  }
  const result = winner(state.board);
  assert.ok(result.winner === '0' || result.winner === '1');
});
