// Strands: a hexhex board of numbered cells; cover up to X empty cells marked X.

import { cellKey, hexBoard, hexCells } from "../hex.js";
import { h, s } from "../ui.js";

const NAMED_LAYOUTS = ["classic-6", "small-4", "small-5", "alt-5", "alt-6", "low-6", "alt-7"];
const STONE = { B: "black", W: "white" };

export const title = "Strands";
export const seatNames = ["Black", "White"];

// --- lobby ----------------------------------------------------------------------------------
export function optionsForm() {
  const layout = h("select", { id: "strands-layout", name: "layout" },
    NAMED_LAYOUTS.map((id) => h("option", { value: id }, id)),
    h("option", { value: "random-6" }, "random-6 (seeded)"),
    h("option", { value: "random-7" }, "random-7 (seeded)"),
    h("option", { value: "custom" }, "custom rows…"));
  const seed = h("input", { id: "strands-seed", type: "number", step: 1, value: Math.floor(Math.random() * 1e6) });
  const side = h("input", { id: "strands-side", type: "number", min: 2, max: 12, value: 2 });
  const rows = h("textarea", { id: "strands-rows", rows: 4, cols: 16, spellcheck: "false" }, "22\n212\n22");
  const placement = h("select", { id: "strands-placement" },
    h("option", { value: "up_to" }, "up to X cells (official)"), h("option", { value: "exact" }, "exactly X cells"));
  const seedRow = h("p", { hidden: true }, h("label", { for: "strands-seed" }, "Seed "), seed);
  const customRows = h("div", { hidden: true },
    h("p", {}, h("label", { for: "strands-side" }, "Side "), side),
    h("p", {}, h("label", { for: "strands-rows" }, "Rows (canonical order, digits 1–6, one row a line)"), h("br"), rows));
  layout.addEventListener("change", () => {
    seedRow.hidden = !layout.value.startsWith("random");
    customRows.hidden = layout.value !== "custom";
  });
  const node = h("div", {},
    h("p", {}, h("label", { for: "strands-layout" }, "Layout "), layout), seedRow, customRows,
    h("p", {}, h("label", { for: "strands-placement" }, "Placement "), placement));
  return {
    node,
    options() {
      const options = { placement: placement.value };
      if (layout.value === "custom") {
        options.layout = { side: Number(side.value), rows: rows.value.split(/\s+/).filter(Boolean) };
      } else {
        options.layout = layout.value;
        if (layout.value.startsWith("random")) options.seed = Number(seed.value);
      }
      return options;
    },
  };
}

// --- the match ------------------------------------------------------------------------------
function numbersOf(view) {
  return view.layout.rows.join("");
}

/** Placements the seat may make, as sets of cell keys, or null when the list was cut short. */
function legalPlacements(ctx) {
  if (!ctx.legal || ctx.legal.truncated) return null;
  return ctx.legal.actions.filter((a) => a.type === "place").map((a) => new Set(a.cells.map(cellKey)));
}

function targets(view, ctx, selected) {
  const placements = legalPlacements(ctx);
  const cells = hexCells(view.layout.side);
  const numbers = numbersOf(view);
  if (placements) {
    const out = new Set();
    for (const placement of placements) {
      if ([...selected].every((k) => placement.has(k))) placement.forEach((k) => out.add(k));
    }
    return out;
  }
  // The list was cut short (very many combinations): derive the candidates from the view.
  const firstSelected = [...selected][0];
  const wanted = firstSelected ? numbers[cells.findIndex((c) => cellKey(c) === firstSelected)] : view.turn === 0 ? "2" : null;
  return new Set(cells.filter((c, i) => view.board[i] === "." && (!wanted || numbers[i] === wanted)).map(cellKey));
}

export function render(view, ctx) {
  const local = ctx.local;
  if (local.seq !== view.seq) {
    local.seq = view.seq;
    local.selected = new Set();
  }
  const selected = local.selected;
  const cells = hexCells(view.layout.side);
  const numbers = numbersOf(view);
  const canAct = ctx.canAct;
  const legalCells = canAct ? targets(view, ctx, selected) : new Set();

  const toggle = (key) => {
    if (selected.has(key)) selected.delete(key);
    else selected.add(key);
    ctx.rerender();
  };
  const board = hexBoard({
    side: view.layout.side,
    title: `Strands board, side ${view.layout.side}`,
    size: view.layout.side > 5 ? 22 : 28,
    cellInfo(cell, i) {
      const key = cellKey(cell);
      const stone = STONE[view.board[i]];
      const isSelected = selected.has(key);
      const legal = legalCells.has(key);
      const label = `cell ${key}, marked ${numbers[i]}, ${stone ? stone + " stone" : "empty"}` +
        (isSelected ? ", selected" : legal ? ", legal target" : "");
      const classes = [`n${numbers[i]}`, stone ? "stone-" + stone : "", isSelected ? "selected" : "", legal ? "legal" : ""];
      return {
        label, class: classes.filter(Boolean).join(" "),
        onActivate: canAct && !stone ? () => toggle(key) : null,
      };
    },
    drawCell(group, cell, i, x, y, size) {
      const stone = STONE[view.board[i]];
      const key = cellKey(cell);
      if (stone) {
        group.append(s("circle", { class: "stone " + stone, cx: x, cy: y, r: size * 0.68 }));
        group.append(s("text", { class: "num on-" + stone, x, y }, numbers[i]));
      } else {
        if (selected.has(key)) {
          group.append(s("circle", { class: "stone pending " + seatNames[ctx.actingSeat ?? 0].toLowerCase(), cx: x, cy: y, r: size * 0.68 }));
        }
        group.append(s("text", { class: "num", x, y }, numbers[i]));
      }
    },
  });
  return { board, panel: panel(view, ctx, selected, legalCells) };
}

function panel(view, ctx, selected, legalCells) {
  const groups = view.groups || { black: [], white: [] };
  const info = h("dl", { class: "facts" },
    h("dt", {}, "Layout"), h("dd", {}, `${view.layout.id} (side ${view.layout.side})`),
    h("dt", {}, "Placement"), h("dd", {}, view.placement === "exact" ? "exactly X cells" : "up to X cells"),
    h("dt", {}, "Placements made"), h("dd", {}, String(view.turn)),
    h("dt", {}, h("span", { class: "swatch black", "aria-hidden": "true" }), " Black groups"),
    h("dd", { id: "groups-black" }, groups.black.join(", ") || "none"),
    h("dt", {}, h("span", { class: "swatch white", "aria-hidden": "true" }), " White groups"),
    h("dd", { id: "groups-white" }, groups.white.join(", ") || "none"));
  const controls = [];
  if (ctx.canAct) {
    const placements = legalPlacements(ctx);
    const chosen = [...selected];
    const isLegal = placements ? placements.some((p) => p.size === chosen.length && chosen.every((k) => p.has(k))) : chosen.length > 0;
    const hint = view.turn === 0
      ? "Opening: cover exactly one empty cell marked 2."
      : `Select up to X empty cells all marked X (${legalCells.size} cell(s) can be added).`;
    controls.push(
      h("p", { class: "hint" }, hint),
      h("p", { class: "buttons" },
        h("button", {
          id: "place", type: "button", class: "primary", disabled: chosen.length === 0,
          onclick: () => ctx.act({ type: "place", cells: chosen.map((k) => k.split(",").map(Number)) }),
        }, `Place ${chosen.length} stone${chosen.length === 1 ? "" : "s"}`),
        h("button", { type: "button", disabled: chosen.length === 0, onclick: () => { selected.clear(); ctx.rerender(); } }, "Clear")),
      chosen.length && !isLegal ? h("p", { class: "hint warn" }, "⚠ This selection is not a legal placement; the service will say why.") : null);
  }
  return h("div", {}, info, controls);
}

export function describeEvent(event) {
  if (event.type === "stones_placed") {
    return `${event.color} covers ${event.cells.length} cell(s) marked ${event.number}: ${event.cells.map((c) => `[${c}]`).join(" ")}`;
  }
  return null;
}

export function scoreText(view) {
  const scores = view.outcome && view.outcome.scores;
  if (!scores || !scores.black) return "";
  return `groups Black [${scores.black.join(", ")}] · White [${scores.white.join(", ")}]`;
}
