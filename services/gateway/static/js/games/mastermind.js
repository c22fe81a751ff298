// Mastermind: code rows with key pegs, the commitment of the running try, reveals verified here.
//
// The secret of the running try never comes from the service (the public view has only its
// commitment). The codemaker's own browser keeps the code and salt it chose in localStorage
// (needed for the manual-mode reveal) and shows them only on request.

import { randomHex, sha256Hex } from "../sha256.js";
import { h, s } from "../ui.js";

export const title = "Mastermind";
export const seatNames = ["Seat 0", "Seat 1"];
// What to do follows from the phase; the legal actions would only list the whole code space.
export const needsLegalActions = false;

const COLOURS = [
  ["red", "R", "#d62728"], ["yellow", "Y", "#f2d01e"], ["green", "G", "#2ca02c"], ["blue", "B", "#1f5fd6"],
  ["black", "K", "#111111"], ["white", "W", "#f7f7f7"], ["orange", "O", "#ff8c1a"], ["purple", "P", "#8e44ad"],
  ["brown", "N", "#8b5a2b"], ["cyan", "C", "#17becf"],
];
const DARK = new Set([0, 2, 3, 4, 7, 8]); // colours that take a light letter

const PRESETS = {
  classic: { pegs: 4, colors: 6, repeats: true, max_distinct: null, max_rows: 12, rounds: 2, feedback: "auto" },
  simplified: { pegs: 3, colors: 6, repeats: true, max_distinct: null, max_rows: 12, rounds: 2, feedback: "auto" },
  "no-repeats": { pegs: 4, colors: 6, repeats: false, max_distinct: null, max_rows: 12, rounds: 2, feedback: "auto" },
  "three-colours": { pegs: 4, colors: 6, repeats: true, max_distinct: 3, max_rows: 12, rounds: 2, feedback: "auto" },
  "board-game": { pegs: 4, colors: 6, repeats: true, max_distinct: null, max_rows: 12, rounds: 2, feedback: "manual" },
};

// --- lobby ----------------------------------------------------------------------------------
export function optionsForm() {
  const field = (id, label, input) => h("p", {}, h("label", { for: id }, label + " "), input);
  const number = (id, value, min, max) => h("input", { id, type: "number", value, min, max, step: 1 });
  const preset = h("select", { id: "mm-preset" },
    h("option", { value: "classic" }, "classic (4 pegs, 6 colours)"),
    h("option", { value: "simplified" }, "simplified (3 pegs)"),
    h("option", { value: "no-repeats" }, "no repeated colours"),
    h("option", { value: "three-colours" }, "secret uses at most 3 colours"),
    h("option", { value: "board-game" }, "board game: the codemaker answers (manual feedback)"));
  const pegs = number("mm-pegs", 4, 2, 8);
  const colors = number("mm-colors", 6, 2, 10);
  const repeats = h("input", { id: "mm-repeats", type: "checkbox", checked: true });
  const maxDistinct = h("input", { id: "mm-max-distinct", type: "number", min: 1, max: 10, placeholder: "no limit" });
  const maxRows = number("mm-max-rows", 12, 1, 50);
  const rounds = number("mm-rounds", 2, 2, 100);
  rounds.step = 2;
  const feedback = h("select", { id: "mm-feedback" },
    h("option", { value: "auto" }, "auto: the service answers"), h("option", { value: "manual" }, "manual: the codemaker answers, checked at the reveal"));
  const penalty = number("mm-penalty", 2, 0, 100);
  preset.addEventListener("change", () => {
    const p = PRESETS[preset.value];
    pegs.value = p.pegs; colors.value = p.colors; repeats.checked = p.repeats;
    maxDistinct.value = p.max_distinct ?? ""; maxRows.value = p.max_rows; rounds.value = p.rounds; feedback.value = p.feedback;
  });
  const node = h("div", {},
    field("mm-preset", "Variant", preset),
    h("details", {}, h("summary", {}, "All options"),
      field("mm-pegs", "Pegs", pegs), field("mm-colors", "Colours", colors),
      h("p", {}, repeats, h("label", { for: "mm-repeats" }, " colours may repeat")),
      field("mm-max-distinct", "At most distinct colours in the secret", maxDistinct),
      field("mm-max-rows", "Rows per round", maxRows), field("mm-rounds", "Rounds (even)", rounds),
      field("mm-feedback", "Feedback", feedback), field("mm-penalty", "Extra points when unsolved", penalty)));
  return {
    node,
    options: () => ({
      pegs: Number(pegs.value), colors: Number(colors.value), repeats: repeats.checked,
      max_distinct: maxDistinct.value === "" ? null : Number(maxDistinct.value),
      max_rows: Number(maxRows.value), rounds: Number(rounds.value), feedback: feedback.value,
      unsolved_penalty: Number(penalty.value),
    }),
  };
}

// --- pegs -----------------------------------------------------------------------------------
const asList = (code) => (typeof code === "string" ? [...code].map(Number) : code);
const colourName = (c) => `${COLOURS[c][0]} (${COLOURS[c][1]})`;
const codeText = (code) => asList(code).map((c) => COLOURS[c][1]).join(" ");

function pegSvg(code, { size = 30, hidden = 0 } = {}) {
  const pegs = hidden ? Array(hidden).fill(null) : asList(code);
  const label = hidden ? `${hidden} hidden pegs` : pegs.map(colourName).join(", ");
  const svg = s("svg", { class: "pegs", width: pegs.length * size, height: size, viewBox: `0 0 ${pegs.length * size} ${size}`, role: "img", "aria-label": label });
  pegs.forEach((c, i) => {
    const x = i * size + size / 2, y = size / 2;
    if (c === null) {
      svg.append(s("circle", { class: "peg hidden", cx: x, cy: y, r: size * 0.4 }), s("text", { class: "peg-letter", x, y }, "?"));
    } else {
      svg.append(s("circle", { class: "peg", cx: x, cy: y, r: size * 0.4, fill: COLOURS[c][2] }),
        s("text", { class: "peg-letter" + (DARK.has(c) ? " light" : ""), x, y }, COLOURS[c][1]));
    }
  });
  return svg;
}

/** Key pegs: a filled dark dot per black, a hollow ring per white (shape, not only colour). */
function keySvg(black, white, pegs) {
  const size = 15, perRow = Math.ceil(pegs / 2);
  const svg = s("svg", {
    class: "keys", width: perRow * size, height: 2 * size, role: "img",
    "aria-label": `${black} black, ${white} white`,
  });
  for (let i = 0; i < pegs; i++) {
    const x = (i % perRow) * size + size / 2, y = Math.floor(i / perRow) * size + size / 2;
    const kind = i < black ? "black" : i < black + white ? "white" : "none";
    svg.append(s("circle", { class: "key " + kind, cx: x, cy: y, r: kind === "none" ? 2 : 5.5 }));
  }
  return svg;
}

// --- secrets kept by the codemaker's browser ---------------------------------------------------
const secretKey = (view) => `plylog.mm.${view.match_id}.${view.round}.${view.attempt}`;

function storedSecret(view) {
  try {
    return JSON.parse(localStorage.getItem(secretKey(view)));
  } catch {
    return null;
  }
}

function commitmentOf(matchId, round, attempt, code, salt) {
  return sha256Hex(`MM1|${matchId}|${round}|${attempt}|${code.join(",")}|${salt}`);
}

function feedbackOf(secret, guess) {
  let black = 0;
  const counts = (code) => code.reduce((m, c) => m.set(c, (m.get(c) || 0) + 1), new Map());
  secret.forEach((c, i) => { if (guess[i] === c) black++; });
  const a = counts(secret), b = counts(guess);
  let common = 0;
  for (const [c, n] of a) common += Math.min(n, b.get(c) || 0);
  return [black, common - black];
}

// --- the match ------------------------------------------------------------------------------
export function render(view, ctx) {
  const local = ctx.local;
  const o = view.options;
  if (local.key !== `${view.round}.${view.attempt}.${view.phase}.${view.rows.length}`) {
    local.key = `${view.round}.${view.attempt}.${view.phase}.${view.rows.length}`;
    local.draft = [];
  }
  local.verified = local.verified || {};
  const me = ctx.actingSeat;
  const composing = ctx.canAct && (view.phase === "code" || view.phase === "guess");

  const rows = h("ol", { class: "mm-rows", "aria-label": `rows of round ${view.round}` });
  view.rows.forEach(([code, black, white], i) => {
    rows.append(h("li", { class: "mm-row", dataset: { row: i + 1 } },
      h("span", { class: "rowno" }, String(i + 1)), pegSvg(code),
      black === null ? h("span", { class: "awaiting" }, "awaiting feedback")
        : h("span", { class: "keyinfo" }, keySvg(black, white, o.pegs), h("span", { class: "keytext" }, `${black}● ${white}○`))));
  });
  if (composing && view.phase === "guess") {
    rows.append(h("li", { class: "mm-row draft" }, h("span", { class: "rowno" }, String(view.rows.length + 1)), draftPegs(local, o, ctx)));
  }
  if (view.status === "active" && o.max_rows <= 12) { // the rows still free, as on the board
    for (let row = rows.children.length + 1; row <= o.max_rows; row++) {
      rows.append(h("li", { class: "mm-row empty", "aria-hidden": "true" }, h("span", { class: "rowno" }, String(row)), pegSvg(null, { hidden: o.pegs, size: 24 })));
    }
  }

  const secretRow = h("div", { class: "mm-secret" },
    h("span", {}, "Secret: "), pegSvg(null, { hidden: o.pegs }),
    view.commitment ? h("span", { class: "commitment", title: view.commitment }, ` commitment ${view.commitment.slice(0, 16)}…`) : h("span", {}, " not set yet"));

  const board = h("div", { class: "mm-board" }, secretRow, rows, tries(view, ctx));
  return { board, panel: panel(view, ctx, composing, me) };
}

function draftPegs(local, o, ctx) {
  const cells = h("span", { class: "draft-pegs", role: "group", "aria-label": "your code so far" });
  for (let i = 0; i < o.pegs; i++) {
    const c = local.draft[i];
    cells.append(c === undefined
      ? h("span", { class: "slot", "aria-label": `peg ${i + 1} empty` }, "·")
      : h("button", {
        type: "button", class: "slot filled", "aria-label": `peg ${i + 1}: ${colourName(c)}, remove`,
        onclick: () => { local.draft.splice(i, 1); ctx.rerender(); },
      }, pegSvg([c], { size: 24 })));
  }
  return cells;
}

function palette(local, o, ctx) {
  return h("div", { class: "palette", role: "group", "aria-label": "colours" },
    COLOURS.slice(0, o.colors).map(([name, letter], c) => h("button", {
      type: "button", class: "paint", "data-color": c, "aria-label": `add ${name} (${letter})`,
      disabled: local.draft.length >= o.pegs,
      onclick: () => { local.draft.push(c); ctx.rerender(); },
    }, pegSvg([c], { size: 26 }))));
}

function panel(view, ctx, composing, me) {
  const o = view.options;
  const local = ctx.local;
  const name = (seat) => `seat ${seat} (${ctx.names[seat] || "open"})`;
  const out = [h("dl", { class: "facts" },
    h("dt", {}, "Round"), h("dd", {}, `${view.round} of ${o.rounds}` + (view.attempt > 1 ? `, attempt ${view.attempt}` : "")),
    h("dt", {}, "Codemaker"), h("dd", {}, name(view.codemaker)),
    h("dt", {}, "Codebreaker"), h("dd", {}, name(view.codebreaker)),
    h("dt", {}, "Rules"), h("dd", {}, `${o.pegs} pegs, ${o.colors} colours` + (o.repeats ? "" : ", no repeats") +
      (o.max_distinct ? `, secret ≤ ${o.max_distinct} colours` : "") + `, ${o.max_rows} rows, ${o.feedback} feedback`),
    h("dt", {}, "Points (lower wins)"), h("dd", { id: "mm-totals" }, `seat 0: ${view.totals[0]} · seat 1: ${view.totals[1]}` +
      (view.penalties[0] || view.penalties[1] ? ` (penalties ${view.penalties[0]}, ${view.penalties[1]})` : "")))];

  const mine = ctx.mySeats.includes(view.codemaker) ? storedSecret(view) : null;
  if (mine && view.phase !== "scoring" && view.phase !== "over") {
    const shown = local.showSecret;
    out.push(h("p", { class: "own-secret" },
      h("button", { type: "button", class: "small", "aria-pressed": shown ? "true" : "false", onclick: () => { local.showSecret = !shown; ctx.rerender(); } },
        shown ? "Hide my code" : "Show my code"),
      shown ? h("span", {}, " ", pegSvg(mine.code, { size: 22 })) : h("span", { class: "hint" }, " (only you can see it; hidden from the screen until you ask)")));
  }

  if (composing) {
    const full = local.draft.length === o.pegs;
    const isCode = view.phase === "code";
    out.push(h("h3", {}, isCode ? "Choose your secret code" : `Your guess for row ${view.rows.length + 1}`),
      isCode ? draftPegs(local, o, ctx) : null,
      palette(local, o, ctx),
      h("p", { class: "buttons" },
        h("button", {
          id: isCode ? "mm-set-code" : "mm-guess", type: "button", class: "primary", disabled: !full,
          onclick: () => (isCode ? setCode(view, ctx, [...local.draft]) : ctx.act({ type: "guess", code: [...local.draft] })),
        }, isCode ? (o.feedback === "manual" ? "Commit to this code" : "Set secret code") : "Guess"),
        h("button", { type: "button", disabled: !local.draft.length, onclick: () => { local.draft = []; ctx.rerender(); } }, "Clear")));
  } else if (ctx.canAct && view.phase === "feedback") {
    out.push(feedbackForm(view, ctx, mine));
  } else if (ctx.canAct && view.phase === "reveal") {
    out.push(h("h3", {}, "Reveal your code"),
      mine ? h("p", { class: "buttons" }, h("button", {
        id: "mm-reveal", type: "button", class: "primary",
        onclick: () => ctx.act({ type: "reveal", code: mine.code, salt: mine.salt }),
      }, "Reveal code and salt")) : h("p", { class: "msg error" }, "This browser does not hold the code committed to; reveal it from the browser that set it."));
  } else if (view.status === "active") {
    const waiting = view.phase === "guess" ? `the codebreaker's guess on row ${view.rows.length + 1}` :
      view.phase === "code" ? "the codemaker's secret code" : view.phase === "feedback" ? "the codemaker's feedback" : "the codemaker's reveal";
    out.push(h("p", { class: "hint" }, `Waiting for ${waiting}.`));
  }
  return h("div", {}, out);
}

async function setCode(view, ctx, code) {
  const salt = randomHex(16);
  localStorage.setItem(secretKey(view), JSON.stringify({ code, salt }));
  if (view.options.feedback === "manual") {
    const commitment = await commitmentOf(view.match_id, view.round, view.attempt, code, salt);
    return ctx.act({ type: "commit", commitment });
  }
  return ctx.act({ type: "set_code", code, salt });
}

function feedbackForm(view, ctx, mine) {
  const pending = view.rows[view.rows.length - 1][0];
  const [black, white] = mine ? feedbackOf(mine.code, asList(pending)) : [0, 0];
  const blackInput = h("input", { id: "mm-black", type: "number", min: 0, max: view.options.pegs, value: black });
  const whiteInput = h("input", { id: "mm-white", type: "number", min: 0, max: view.options.pegs, value: white });
  return h("div", {}, h("h3", {}, `Answer row ${view.rows.length}`), pegSvg(pending),
    h("p", {}, h("label", { for: "mm-black" }, "● black (right colour, right place) "), blackInput),
    h("p", {}, h("label", { for: "mm-white" }, "○ white (right colour, wrong place) "), whiteInput),
    mine ? h("p", { class: "hint" }, "Prefilled with the true answer for your code; a wrong answer costs 3 points at the reveal.") : null,
    h("p", { class: "buttons" }, h("button", {
      id: "mm-feedback", type: "button", class: "primary",
      onclick: () => ctx.act({ type: "feedback", black: Number(blackInput.value), white: Number(whiteInput.value) }),
    }, "Give feedback")));
}

function tries(view, ctx) {
  if (!view.tries.length) return null;
  const local = ctx.local;
  const list = h("ol", { class: "mm-tries", "aria-label": "finished rounds" });
  for (const t of view.tries) {
    const key = `${t.round}.${t.attempt}`;
    if (local.verified[key] === undefined) {
      local.verified[key] = null;
      commitmentOf(view.match_id, t.round, t.attempt, asList(t.code), t.salt).then((hex) => {
        local.verified[key] = hex === t.commitment;
        ctx.rerender();
      });
    }
    const verdict = local.verified[key];
    list.append(h("li", { class: "mm-try", dataset: { round: t.round } },
      `Round ${t.round}${t.attempt > 1 ? ` attempt ${t.attempt}` : ""}: seat ${t.codemaker}'s code `, pegSvg(t.code, { size: 22 }),
      t.error ? h("strong", {}, ` indication error (${t.error.replace("_", " ")}${t.wrong_rows.length ? `, rows ${t.wrong_rows.join(", ")}` : ""}): +3 to seat ${t.codemaker}`)
        : ` → ${t.points} point(s) to seat ${1 - t.codemaker}`,
      h("span", { class: "verify" }, verdict === null ? " · checking commitment…" : verdict ? " · ✓ commitment verified" : " · ✗ commitment does not match")));
  }
  return h("section", {}, h("h3", {}, "Revealed codes"), list);
}

export function describeEvent(event) {
  switch (event.type) {
    case "secret_committed": return `codemaker committed to a secret (round ${event.round}, attempt ${event.attempt})`;
    case "guessed": return `guess ${event.row}: ${codeText(event.code)}`;
    case "feedback_given": return `row ${event.row}: ${event.black} black, ${event.white} white`;
    case "secret_revealed": return `secret of round ${event.round} revealed: ${codeText(event.code)}`;
    case "round_scored": return `round ${event.round}: ${event.points} point(s) to seat ${event.breaker}`;
    case "indication_error": return `indication error (${event.reason}) in round ${event.round}: +${event.penalty} to seat ${event.codemaker}`;
    case "round_started": return `round ${event.round} attempt ${event.attempt}: seat ${event.codemaker} makes the code`;
    default: return null;
  }
}

export function scoreText(view) {
  const scores = view.outcome && view.outcome.scores;
  return Array.isArray(scores) ? `points seat 0: ${scores[0]} · seat 1: ${scores[1]} (lower wins)` : "";
}
