// Replay: any match, finished or running, position by position (/positions/{seq}), with a
// slider and step buttons. A running match keeps growing: new positions arrive on its stream.

import { api, followMatch, listOf } from "./api.js";
import { GAMES, describeEvent, outcomeText, seatName } from "./games/index.js";
import { GAME_TITLES, clear, h, header, messageArea, query } from "./ui.js";

const matchId = query("id");
const messages = messageArea();
const root = h("main", { id: "replay", class: "replay" });
const positions = new Map(); // seq -> view
const records = new Map(); // seq -> accepted result (its events)
const state = { seq: 1, last: 1, game: null, timer: null, shownSeq: null };

const slider = h("input", { id: "replay-slider", type: "range", min: 1, max: 1, value: 1, step: 1, "aria-label": "position" });
const label = h("output", { id: "replay-seq", for: "replay-slider" });
const boardBox = h("div", { class: "board-wrap" });
const panelBox = h("aside", { class: "panel" });
const eventsBox = h("div", { class: "replay-events", "aria-live": "polite" });

function button(id, text, labelText, onclick) {
  return h("button", { id, type: "button", "aria-label": labelText, title: labelText, onclick }, text);
}

async function show(seq) {
  seq = Math.max(1, Math.min(state.last, seq));
  state.seq = seq;
  slider.max = state.last;
  slider.value = seq;
  label.textContent = `position ${seq} of ${state.last}`;
  let view = positions.get(seq);
  if (!view) {
    try {
      view = await api.position(matchId, seq);
      positions.set(seq, view);
    } catch (error) {
      return messages.show(error.message);
    }
  }
  if (state.seq !== seq) return; // a later request won the race
  draw(view, seq);
}

function draw(view, seq) {
  const game = GAMES[view.game];
  const ctx = {
    matchId, names: view.seats, mySeats: [], actingSeat: null, canAct: false, legal: null,
    local: {}, act: async () => false, rerender: () => draw(view, seq), fail: () => {},
  };
  const { board, panel } = game.render(view, ctx);
  board.dataset.seq = seq;
  clear(boardBox, board);
  clear(panelBox, h("p", { class: "status", id: "replay-status" }, statusOf(view)), panel);
  const record = records.get(seq);
  clear(eventsBox, h("h2", {}, `Position ${seq}`),
    record ? h("p", {}, h("span", { class: "who" }, record.player || ""), ` at ${record.at || ""}`) : null,
    h("ul", {}, (record ? record.events : []).map((event) => h("li", {}, describeEvent(view.game, event)))));
  state.shownSeq = seq;
  document.body.dataset.shownSeq = String(seq);
}

function statusOf(view) {
  if (view.status === "over") return `Game over: ${outcomeText(view)}`;
  if (view.status === "waiting") return "Waiting for players.";
  return `To move: ${(view.to_move || []).map((seat) => `${seatName(view.game, seat)} (${view.seats[seat]})`).join(", ")}`;
}

function togglePlay(playButton) {
  if (state.timer) {
    clearInterval(state.timer);
    state.timer = null;
    playButton.textContent = "▶ Play";
    return;
  }
  if (state.seq >= state.last) show(1);
  playButton.textContent = "❚❚ Pause";
  state.timer = setInterval(() => {
    if (state.seq >= state.last) return togglePlay(playButton);
    show(state.seq + 1);
  }, 800);
}

async function start() {
  document.body.prepend(header("replay"));
  document.body.append(root);
  if (!matchId) {
    root.append(h("p", { class: "msg error" }, "No match id in the address (replay.html?id=…)."));
    return;
  }
  root.append(messages.node);
  let view;
  try {
    view = await api.match(matchId);
  } catch (error) {
    return messages.show(error.message);
  }
  state.game = view.game;
  state.last = view.seq;
  positions.set(view.seq, view);
  try {
    for (const record of listOf(await api.events(matchId), "results")) records.set(record.seq, record);
  } catch (error) {
    messages.show(`The move list could not be loaded: ${error.message}`);
  }
  const playButton = button("replay-play", "▶ Play", "play through the positions", () => togglePlay(playButton));
  slider.addEventListener("input", () => show(Number(slider.value)));
  root.append(
    h("h1", {}, `Replay: ${GAME_TITLES[view.game]} `, h("small", { class: "mono" }, matchId), " ",
      h("a", { href: `/match.html?id=${encodeURIComponent(matchId)}` }, view.status === "over" ? "(match page)" : "(watch live)")),
    h("div", { class: "replay-controls", role: "group", "aria-label": "replay controls" },
      button("replay-first", "|◀", "first position", () => show(1)),
      button("replay-prev", "◀", "previous position", () => show(state.seq - 1)),
      slider,
      button("replay-next", "▶", "next position", () => show(state.seq + 1)),
      button("replay-last", "▶|", "last position", () => show(state.last)),
      playButton, label),
    h("div", { class: "play" }, boardBox, panelBox),
    eventsBox);
  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, textarea, select, button")) return;
    if (event.key === "ArrowLeft") show(state.seq - 1);
    else if (event.key === "ArrowRight") show(state.seq + 1);
    else if (event.key === "Home") show(1);
    else if (event.key === "End") show(state.last);
  });
  await show(view.seq);
  if (view.status !== "over") {
    followMatch(matchId, {
      fromSeq: view.seq,
      onRecord(record) {
        records.set(record.seq, record);
        if (record.view) positions.set(record.seq, record.view);
        const following = state.seq === state.last;
        state.last = Math.max(state.last, record.seq);
        if (following && !state.timer) show(state.last);
        else { slider.max = state.last; label.textContent = `position ${state.seq} of ${state.last}`; }
      },
    });
  }
}

start();
