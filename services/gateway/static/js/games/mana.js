// Mana: the 6×6 board of 1-3 marks, Daimyo and Ronin, the bird and the mana it sets.
//
// A move is built in up to three clicks: a piece (or a reserve Ronin to drop), its target,
// then the bird's square. Legal choices come from the legal-actions list; a piece outside it
// may still be tried, and the service's rejection explains why it may not move.

import { boardKeys, cellGroup, h, s } from "../ui.js";

export const title = "Mana";
export const seatNames = ["Black", "White"];

const FILES = "abcdef";
const PIECE = { D: ["black", "Daimyo"], R: ["black", "Ronin"], d: ["white", "Daimyo"], r: ["white", "Ronin"] };
const square = (i) => `${FILES[i % 6]}${Math.floor(i / 6) + 1}`;

export function optionsForm() {
  const maxPlies = h("input", { id: "mana-max-plies", type: "number", min: 1, max: 10000, value: 300 });
  const birdBlocks = h("input", { id: "mana-bird-blocks", type: "checkbox", checked: true });
  return {
    node: h("div", {},
      h("p", {}, h("label", { for: "mana-max-plies" }, "Draw after this many moves "), maxPlies),
      h("p", {}, birdBlocks, h("label", { for: "mana-bird-blocks" }, " the bird blocks paths and landing"))),
    options: () => ({ max_plies: Number(maxPlies.value), bird_blocks: birdBlocks.checked }),
  };
}

function legalActions(ctx) {
  return ctx.legal ? ctx.legal.actions : [];
}

/** What the current selection allows: {sources, targets, birds} as sets of square names. */
function choices(view, ctx, sel) {
  const actions = legalActions(ctx);
  const out = { sources: new Set(), targets: new Set(), birds: new Set(), daimyo: new Set(), drop: false };
  for (const a of actions) {
    if (a.type === "place_daimyo") out.daimyo.add(a.square);
    if (a.type === "drop") out.drop = true;
    if (a.type === "move") out.sources.add(a.from);
    const matches = sel.from === "reserve" ? a.type === "drop" : a.type === "move" && a.from === sel.from;
    if (!sel.from || !matches) continue;
    if (!sel.to) out.targets.add(a.to);
    else if (a.to === sel.to && a.bird) out.birds.add(a.bird);
  }
  return out;
}

export function render(view, ctx) {
  const local = ctx.local;
  if (local.seq !== view.seq) {
    local.seq = view.seq;
    local.sel = {};
  }
  const sel = local.sel;
  const flip = ctx.mySeats.length === 1 && ctx.mySeats[0] === 1; // White sees its own back row at the bottom
  const can = ctx.canAct;
  const c = can ? choices(view, ctx, sel) : { sources: new Set(), targets: new Set(), birds: new Set(), daimyo: new Set() };
  const ownPieces = can ? (ctx.actingSeat === 0 ? "DR" : "dr") : "";
  const size = 64, margin = 22;
  const svg = s("svg", {
    class: "board mana", viewBox: `0 0 ${6 * size + margin} ${6 * size + margin}`, role: "group",
    "aria-label": "Mana board",
  });
  svg.append(s("title", {}, "Mana board"));
  for (let i = 0; i < 36; i++) {
    const name = square(i);
    const file = i % 6, rank = Math.floor(i / 6);
    const col = flip ? 5 - file : file, row = flip ? rank : 5 - rank;
    const x = margin + col * size, y = row * size;
    const marks = Number(view.marks[i]);
    const piece = view.board[i];
    const isBird = view.bird === name;
    const onMana = view.mana !== null && marks === view.mana && view.phase === "play";
    const stage = sel.to ? "bird" : sel.from ? "target" : "source";
    let legal = false, onActivate = null;
    if (can && view.phase === "setup") {
      legal = c.daimyo.has(name);
      if (legal) onActivate = () => ctx.act({ type: "place_daimyo", square: name });
    } else if (can && view.phase === "play") {
      if (stage === "source") {
        legal = c.sources.has(name);
        if (piece !== "." && ownPieces.includes(piece)) onActivate = () => { sel.from = name; ctx.rerender(); };
      } else if (stage === "target") {
        legal = c.targets.has(name);
        if (name === sel.from) onActivate = () => { local.sel = {}; ctx.rerender(); };
        else if (ownPieces.includes(piece)) onActivate = () => { local.sel = { from: name }; ctx.rerender(); };
        else onActivate = () => chooseTarget(view, ctx, sel, name, legal);
      } else {
        legal = c.birds.has(name);
        if (legal) onActivate = () => submit(ctx, sel, name);
      }
    }
    const selected = sel.from === name || sel.to === name;
    const pieceText = piece === "." ? "empty" : `${PIECE[piece][0]} ${PIECE[piece][1]}`;
    const label = `${name}, ${marks} mark${marks > 1 ? "s" : ""}, ${pieceText}${isBird ? ", bird" : ""}` +
      (onMana ? ", mana square" : "") + (selected ? ", selected" : legal ? ", legal choice" : "");
    const group = cellGroup(name, label, onActivate, {
      class: ["sq", `m${marks}`, onMana ? "mana-sq" : "", legal ? "legal" : "", selected ? "selected" : ""].filter(Boolean).join(" "),
    });
    group.append(s("rect", { class: "square", x, y, width: size, height: size }));
    if (legal || selected || onMana) group.append(s("rect", { class: "ring", x: x + 4, y: y + 4, width: size - 8, height: size - 8, rx: 4 }));
    for (let k = 0; k < marks; k++) group.append(s("circle", { class: "pip", cx: x + 9 + k * 9, cy: y + size - 9, r: 3 }));
    if (piece !== ".") drawPiece(group, piece, x + size / 2, y + size / 2 - 3);
    if (isBird) drawBird(group, x + size - 14, y + 14);
    svg.append(group);
  }
  for (let k = 0; k < 6; k++) {
    const col = flip ? 5 - k : k, row = flip ? k : 5 - k;
    svg.append(s("text", { class: "coord", x: margin + col * size + size / 2, y: 6 * size + 15 }, FILES[k]));
    svg.append(s("text", { class: "coord", x: 10, y: row * size + size / 2 }, String(k + 1)));
  }
  boardKeys(svg);
  return { board: svg, panel: panel(view, ctx, c, sel) };
}

function chooseTarget(view, ctx, sel, name, legal) {
  sel.to = name;
  const birds = choices(view, ctx, sel).birds;
  if (!legal || birds.size === 0) return submit(ctx, sel, null); // no bird to place, or let the service explain
  ctx.rerender();
}

function submit(ctx, sel, bird) {
  const action = sel.from === "reserve" ? { type: "drop", to: sel.to } : { type: "move", from: sel.from, to: sel.to };
  if (bird) action.bird = bird;
  ctx.local.sel = {};
  return ctx.act(action);
}

function drawPiece(group, piece, x, y) {
  const [colour, kind] = PIECE[piece];
  if (kind === "Daimyo") {
    // A Daimyo is an octagon, a Ronin a circle: shape as well as letter.
    const r = 21, pts = [];
    for (let k = 0; k < 8; k++) {
      const a = Math.PI / 8 + (k * Math.PI) / 4;
      pts.push(`${(x + r * Math.cos(a)).toFixed(1)},${(y + r * Math.sin(a)).toFixed(1)}`);
    }
    group.append(s("polygon", { class: `piece ${colour}`, points: pts.join(" ") }));
  } else {
    group.append(s("circle", { class: `piece ${colour}`, cx: x, cy: y, r: 17 }));
  }
  group.append(s("text", { class: `piece-letter on-${colour}`, x, y }, kind[0]));
}

function drawBird(group, x, y) {
  group.append(s("g", { class: "bird", "aria-hidden": "true" },
    s("circle", { cx: x, cy: y, r: 11 }),
    s("path", { d: `M ${x - 7} ${y - 1} Q ${x - 3} ${y - 6} ${x} ${y + 1} Q ${x + 3} ${y - 6} ${x + 7} ${y - 1}` })));
}

function pips(n) {
  return h("span", { class: "pips", "aria-hidden": "true" }, "●".repeat(n));
}

function panel(view, ctx, c, sel) {
  const manaText = view.phase !== "play" ? "—"
    : view.mana === null ? "none yet: any piece may move"
      : `${view.mana} (bird on ${view.bird})`;
  const out = [h("div", { class: "mana-banner", id: "mana-required" },
    h("span", { class: "big" }, "Mana "), view.mana ? pips(view.mana) : null, " ", h("strong", {}, manaText),
    view.phase === "play" && view.mana !== null
      ? h("p", {}, view.disobey
        ? "No piece can obey the mana: move any piece, or drop a captured Ronin."
        : `The player to move must move a piece standing on a square with ${view.mana} mark${view.mana > 1 ? "s" : ""} (outlined).`)
      : null)];
  out.push(h("dl", { class: "facts" },
    h("dt", {}, "Phase"), h("dd", {}, view.phase === "setup" ? "setup: each side places its Daimyo on a double square of its back row" : view.phase),
    h("dt", {}, "Moves"), h("dd", {}, `${view.ply} of ${view.max_plies}`),
    h("dt", {}, "Reserves"), h("dd", {}, `Black ${view.reserves[0]} Ronin · White ${view.reserves[1]} Ronin`),
    view.bird_blocks ? null : [h("dt", {}, "Bird"), h("dd", {}, "a pure marker (does not block)")]));
  if (ctx.canAct && view.phase === "setup") {
    out.push(h("p", { class: "hint" }, "Click a highlighted square of your back row to place your Daimyo."));
  } else if (ctx.canAct && view.phase === "play") {
    const stage = sel.to ? `Now put the bird on a highlighted empty square with the marks of ${sel.to}.`
      : sel.from === "reserve" ? "Click the square to drop a Ronin on."
        : sel.from ? `Move the piece on ${sel.from}: click its target (highlighted).`
          : "Click one of your pieces (highlighted ones can move).";
    out.push(h("p", { class: "hint", id: "mana-step" }, stage));
    const reserve = view.reserves[ctx.actingSeat];
    if (reserve > 0 && !sel.from) {
      out.push(h("p", {}, h("button", {
        type: "button", id: "mana-drop", disabled: !c.drop, onclick: () => { ctx.local.sel = { from: "reserve" }; ctx.rerender(); },
      }, `Drop a Ronin (${reserve} in reserve)`)));
    }
    if (sel.from) out.push(h("p", {}, h("button", { type: "button", onclick: () => { ctx.local.sel = {}; ctx.rerender(); } }, "Cancel")));
  }
  return h("div", {}, out);
}

export function describeEvent(event) {
  switch (event.type) {
    case "daimyo_placed": return `${["Black", "White"][event.seat]} Daimyo on ${event.square}`;
    case "piece_moved": return `${["Black", "White"][event.seat]} ${event.piece || "piece"} ${event.from}→${event.to}` +
      (event.captured ? ` captures a ${event.captured}` : "") + (event.bird ? `, bird to ${event.bird}` : "");
    case "ronin_dropped": return `${["Black", "White"][event.seat]} drops a Ronin on ${event.to}` + (event.bird ? `, bird to ${event.bird}` : "");
    case "turn_passed": return `${["Black", "White"][event.seat]} has no legal action and passes`;
    default: return null;
  }
}

export function scoreText() {
  return "";
}
