// Mind Ninja: bidding, pattern choice, setup, roles, then play with free moves, on a hex board.

import { cellKey, hexBoard } from "../hex.js";
import { h, s } from "../ui.js";

export const title = "Mind Ninja";
export const seatNames = ["Seat 0", "Seat 1"];

// What each catalogue pattern asks for (docs/rules/mind-ninja.md); ids are what the service takes.
const CATALOGUE = {
  five_in_a_row: "a row of 5 red stones along one axis (Gomoku)",
  havannah: "a red ring, bridge (two corners) or fork (three sides), as in Havannah",
  hex: "a red group touching two opposite edges, as in Hex",
  y: "a red group touching three alternate edges, as in Y",
  ring: "a red group enclosing at least one cell",
  big_group: "one red group of at least a quarter of the cells",
  triangle: "red stones forming the 6-cell triangle (any rotation)",
  flower: "red stones on a cell and all 6 of its neighbours",
  odd: "judged on the full board: an odd number of groups (both colours) of 5 or more; both place either colour",
  equicolored: "judged on the full board: of the cells with as many red as blue neighbours, more hold blue; both place either colour",
};
const STONE = { R: "red", B: "blue" };

export function optionsForm() {
  const side = h("input", { id: "mn-side", type: "number", min: 3, max: 10, value: 7 });
  return {
    node: h("div", {},
      h("p", {}, h("label", { for: "mn-side" }, "Board side (3–10; 7 = 127 cells) "), side),
      h("p", { class: "hint" }, "The pattern is chosen later, in the game, by the player who loses the bidding.")),
    options: () => ({ side: Number(side.value) }),
  };
}

function legalCells(ctx) {
  const out = new Map(); // cell key -> colours allowed
  for (const a of ctx.legal ? ctx.legal.actions : []) {
    if (a.type === "place") {
      const key = cellKey(a.cell);
      out.set(key, [...(out.get(key) || []), a.color]);
    } else if (a.type === "setup") {
      const stone = a.stones[0];
      const key = cellKey(stone.cell);
      out.set(key, [...(out.get(key) || []), stone.color]);
    }
  }
  return out;
}

function has(ctx, type) {
  return Boolean(ctx.legal && ctx.legal.actions.some((a) => a.type === type));
}

export function render(view, ctx) {
  const local = ctx.local;
  local.colour = local.colour || "red";
  const can = ctx.canAct;
  const targets = can && (view.phase === "setup" || view.phase === "play") ? legalCells(ctx) : new Map();
  const win = new Set(((view.outcome && view.outcome.scores && view.outcome.scores.cells) || []).map(cellKey));
  const colourFor = (key) => {
    const allowed = targets.get(key) || [];
    return allowed.includes(local.colour) ? local.colour : allowed[0] || local.colour;
  };
  const board = hexBoard({
    side: view.side,
    title: `Mind Ninja board, side ${view.side}`,
    size: view.side > 7 ? 18 : view.side > 5 ? 22 : 28,
    cellInfo(cell, i) {
      const key = cellKey(cell);
      const stone = STONE[view.board[i]];
      const legal = targets.has(key);
      const label = `cell ${key}, ${stone ? stone + " stone" : "empty"}` + (win.has(key) ? ", part of the pattern" : "") +
        (legal ? `, legal: place ${colourFor(key)}` : "");
      const act = () => {
        const color = colourFor(key);
        return view.phase === "setup"
          ? ctx.act({ type: "setup", stones: [{ cell, color }] })
          : ctx.act({ type: "place", cell, color });
      };
      return {
        label, class: [stone ? "stone-" + stone : "", legal ? "legal" : "", win.has(key) ? "win" : ""].filter(Boolean).join(" "),
        onActivate: can && !stone && (view.phase === "setup" || view.phase === "play") ? act : null,
      };
    },
    drawCell(group, cell, i, x, y, size) {
      const stone = STONE[view.board[i]];
      if (stone) drawStone(group, stone, x, y, size * 0.62);
    },
  });
  return { board, panel: panel(view, ctx) };
}

/** Red stones are circles marked R, blue ones diamonds marked B: shape and letter, not only hue. */
function drawStone(group, colour, x, y, r) {
  if (colour === "red") group.append(s("circle", { class: "stone red", cx: x, cy: y, r }));
  else group.append(s("polygon", { class: "stone blue", points: `${x},${y - r * 1.1} ${x + r * 1.1},${y} ${x},${y + r * 1.1} ${x - r * 1.1},${y}` }));
  group.append(s("text", { class: "stone-letter", x, y }, colour === "red" ? "R" : "B"));
}

function seatName(ctx, seat) {
  return seat === null || seat === undefined ? "—" : `seat ${seat} (${ctx.names[seat] || "open"})`;
}

function panel(view, ctx) {
  const out = [h("dl", { class: "facts" },
    h("dt", {}, "Phase"), h("dd", { id: "mn-phase" }, view.phase),
    h("dt", {}, "Bids"), h("dd", {}, view.bids.length ? view.bids.map(([seat, v]) => `seat ${seat}: ${v}`).join(", ") : "none"),
    view.chooser !== null ? [h("dt", {}, "Chooser"), h("dd", {}, `${seatName(ctx, view.chooser)}, ${view.free_moves} free move(s) left`),
      h("dt", {}, "Inventor"), h("dd", {}, seatName(ctx, view.inventor))] : null,
    view.pattern ? [h("dt", {}, "Pattern"), h("dd", { id: "mn-pattern" }, patternText(view.pattern))] : null,
    view.builder !== null ? [h("dt", {}, "Builder"), h("dd", {}, seatName(ctx, view.builder) + (view.pattern && view.pattern.colors === "fixed" ? ", places red" : "")),
      h("dt", {}, "Blocker"), h("dd", {}, seatName(ctx, view.blocker) + (view.pattern && view.pattern.colors === "fixed" ? ", places blue" : ""))] : null)];
  if (ctx.canAct) out.push(controls(view, ctx));
  return h("div", {}, out);
}

function patternText(pattern) {
  const params = Object.entries(pattern.params || {}).filter(([k]) => k !== "cells").map(([k, v]) => `${k} ${v}`).join(", ");
  return `${pattern.name || pattern.id}` + (params ? ` (${params})` : "") + ` · colours ${pattern.colors}` + (pattern.full_board ? " · judged on the full board" : "") +
    (CATALOGUE[pattern.id] ? ` — ${CATALOGUE[pattern.id]}` : "");
}

function colourPicker(ctx, allowed) {
  const local = ctx.local;
  return h("fieldset", { class: "colours" }, h("legend", {}, "Stone colour"),
    ["red", "blue"].map((colour) => h("label", {},
      h("input", {
        type: "radio", name: "mn-colour", value: colour, checked: local.colour === colour, disabled: !allowed.includes(colour),
        onchange: () => { local.colour = colour; ctx.rerender(); },
      }), " ", colour === "red" ? "● red (R)" : "◆ blue (B)")));
}

function controls(view, ctx) {
  switch (view.phase) {
    case "bidding": return biddingControls(view, ctx);
    case "pattern": return patternControls(view, ctx);
    case "setup": return h("div", {}, h("h3", {}, "Set up the board"),
      h("p", { class: "hint" }, "As the inventor, place any stones of either colour (click empty cells), then end the setup."),
      colourPicker(ctx, ["red", "blue"]),
      h("p", { class: "buttons" }, h("button", { id: "mn-end-setup", type: "button", class: "primary", onclick: () => ctx.act({ type: "end_setup" }) }, "End setup")));
    case "roles": return h("div", {}, h("h3", {}, "Choose your role"),
      h("p", { class: "hint" }, `You hold ${view.free_moves} free move(s). The builder tries to form the pattern; the blocker tries to stop it.`),
      h("p", { class: "buttons" },
        h("button", { id: "mn-builder", type: "button", class: "primary", onclick: () => ctx.act({ type: "choose_role", role: "builder" }) }, "Be the builder"),
        h("button", { id: "mn-blocker", type: "button", class: "primary", onclick: () => ctx.act({ type: "choose_role", role: "blocker" }) }, "Be the blocker")));
    case "play": {
      const either = view.pattern && view.pattern.colors === "either";
      const me = ctx.actingSeat;
      return h("div", {},
        view.free_pending ? h("p", { class: "free-move", id: "mn-free" }, `Free move: place one extra stone, or decline it (${view.free_moves} left).`) : null,
        either ? colourPicker(ctx, ["red", "blue"]) : h("p", { class: "hint" }, `You place ${me === view.builder ? "red ● (R)" : "blue ◆ (B)"} stones: click an empty cell.`),
        view.free_pending && has(ctx, "decline_free")
          ? h("p", { class: "buttons" }, h("button", { id: "mn-decline", type: "button", onclick: () => ctx.act({ type: "decline_free" }) }, "Decline the free move"))
          : null);
    }
    default: return null;
  }
}

function biddingControls(view, ctx) {
  const low = view.high_bid === null ? 0 : view.high_bid + 1;
  const input = h("input", { id: "mn-bid", type: "number", min: low, value: low, step: 1 });
  return h("div", {}, h("h3", {}, "Bidding"),
    h("p", { class: "hint" }, "A bid is the number of free moves you would give your opponent. Passing makes you the chooser: " +
      `you receive ${view.high_bid ?? 0} free move(s) and pick your role later; your opponent invents the pattern.`),
    h("p", {}, h("label", { for: "mn-bid" }, "Your bid "), input,
      " ", h("button", { id: "mn-bid-button", type: "button", class: "primary", onclick: () => ctx.act({ type: "bid", value: Number(input.value) }) }, "Bid"),
      " ", h("button", { id: "mn-pass", type: "button", onclick: () => ctx.act({ type: "pass" }) }, "Pass")));
}

function patternControls(view, ctx) {
  const listed = ctx.legal ? ctx.legal.actions.filter((a) => a.type === "choose_pattern").map((a) => a.pattern.id) : [];
  const ids = listed.length ? listed : Object.keys(CATALOGUE);
  const local = ctx.local;
  local.pattern = local.pattern && ids.includes(local.pattern) ? local.pattern : ids[0];
  const params = h("input", { id: "mn-params", type: "text", size: 24, placeholder: 'e.g. {"n": 6}', spellcheck: "false" });
  const custom = h("textarea", { id: "mn-custom", rows: 4, cols: 40, spellcheck: "false", placeholder: '{"id":"custom","name":"two rows","colors":"fixed","def":{"all":[{"row":{"n":4}},{"group":{"size":8}}]}}' });
  const choose = () => {
    let pattern;
    try {
      if (custom.value.trim()) pattern = JSON.parse(custom.value);
      else {
        pattern = { id: local.pattern };
        if (params.value.trim()) pattern.params = JSON.parse(params.value);
      }
    } catch (error) {
      return ctx.fail(`That is not valid JSON: ${error.message}`);
    }
    return ctx.act({ type: "choose_pattern", pattern });
  };
  return h("div", {}, h("h3", {}, "Choose the pattern"),
    h("fieldset", { class: "catalogue" }, h("legend", {}, "Catalogue"),
      ids.map((id) => h("label", { class: "pattern-choice" },
        h("input", { type: "radio", name: "mn-pattern", value: id, checked: id === local.pattern, onchange: () => { local.pattern = id; } }),
        " ", h("strong", {}, id.replaceAll("_", " ")), ": ", CATALOGUE[id] || ""))),
    h("p", {}, h("label", { for: "mn-params" }, "Parameters (optional, JSON) "), params),
    h("details", {}, h("summary", {}, "Or invent a custom pattern"), custom),
    h("p", { class: "buttons" }, h("button", { id: "mn-choose-pattern", type: "button", class: "primary", onclick: choose }, "Choose pattern")));
}

export function describeEvent(event) {
  switch (event.type) {
    case "bid_made": return `seat ${event.seat} bids ${event.value}`;
    case "bidding_closed": return `bidding closed: seat ${event.chooser} chooses (${event.free_moves} free moves), seat ${event.inventor} invents`;
    case "pattern_chosen": return `pattern: ${event.pattern.name || event.pattern.id}`;
    case "stones_set_up": return `setup: ${event.stones.map((st) => `${st.color} [${st.cell}]`).join(", ")}`;
    case "setup_ended": return "setup ended";
    case "role_chosen": return `seat ${event.seat} is the ${event.role}`;
    case "stone_placed": return `seat ${event.seat} places ${event.color} on [${event.cell}]${event.free ? " (free move)" : ""}`;
    case "free_move_declined": return `seat ${event.seat} declines a free move (${event.free_moves_left} left)`;
    default: return null;
  }
}

export function scoreText(view) {
  const scores = view.outcome && view.outcome.scores;
  return scores && scores.pattern ? `pattern ${scores.pattern}; builder seat ${scores.builder}` : "";
}
