// The match page: play (with a seat token) or watch one match, live from its seat sockets (a
// player) or its SSE stream (a spectator, or a player whose socket cannot open; seat.js).
// URL: /match.html?id=<match_id>[#token=<seat token>] — a token in the fragment is stored in
// localStorage and removed from the address bar.

import { api, listOf } from "./api.js";
import { followLive } from "./seat.js";
import { GAMES, describeEvent, outcomeText, seatName } from "./games/index.js";
import {
  GAME_TITLES, clear, copyButton, formatClock, formatDays, h, header, identity, learnNames, messageArea, playerName, query,
  rememberSeat, seatOfToken, seatsOf, shownAs, storedIdentity,
} from "./ui.js";

const matchId = query("id");
const messages = messageArea();
const live = h("p", { class: "live-state", role: "status", "aria-live": "polite" }, "connecting…");
const root = h("main", { id: "match", class: "match" });
const state = { view: null, legal: null, local: {}, drafts: {}, log: [], busy: false, confirmResign: false };
let link = null; // followLive's: the seat sockets or the SSE stream

// What the player types (a bid, a guess) survives the re-renders that come without a new
// position (legal actions arriving, a busy flag, a rejection); a new position clears it.
const TYPED = 'input[id]:not([type="radio"]):not([type="checkbox"]):not([readonly]), textarea[id]';
root.addEventListener("input", (event) => {
  if (event.target.matches && event.target.matches(TYPED)) state.drafts[event.target.id] = event.target.value;
});

function restoreDrafts() {
  for (const [id, value] of Object.entries(state.drafts)) {
    const node = document.getElementById(id);
    if (node && node.matches(TYPED)) node.value = value;
  }
}

function takeTokenFromFragment() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  if (!token) return;
  const seat = seatOfToken(token);
  if (seat === 0 || seat === 1) rememberSeat(matchId, seat, token, true);
  history.replaceState(null, "", location.pathname + location.search);
}

/** Seats this browser plays (not those it only keeps to share). */
function mySeats() {
  const seats = seatsOf(matchId);
  return [0, 1].filter((seat) => seats[seat] && seats[seat].mine);
}

/** The seat this browser acts with now: one of its seats that is to move (hot seat: either). */
function actingSeat(view) {
  const mine = mySeats();
  const moving = (view.to_move || []).find((seat) => mine.includes(seat));
  if (moving !== undefined) return moving;
  return mine.length ? mine[0] : null;
}

function canAct(view) {
  const mine = mySeats();
  return view.status === "active" && (view.to_move || []).some((seat) => mine.includes(seat));
}

// --- actions ----------------------------------------------------------------------------------
async function act(action) {
  const view = state.view;
  const seat = actingSeat(view);
  const entry = seatsOf(matchId)[seat];
  if (!entry || state.busy) return false;
  state.busy = true;
  document.body.classList.add("busy");
  messages.clear();
  let result = null, failure = null;
  try {
    result = await link.act(seat, entry.token, action, view.seq);
  } catch (error) {
    failure = error.message || String(error);
  } finally {
    state.busy = false;
    document.body.classList.remove("busy");
  }
  if (failure || (result && result.status === "rejected")) {
    const reason = (result && result.reason) || {};
    messages.show(failure || `Rejected (${reason.code}): ${reason.message}`);
  } else if (result && result.status === "pending") {
    messages.show(`Sent; ${result.message}.`, "info"); // the result will come on the stream
  }
  if (result && result.view) applyView(result.view);
  else render();
  return Boolean(result && result.status === "accepted");
}

async function lifecycle(type) {
  state.confirmResign = false;
  return act({ type });
}

async function join() {
  try {
    const answer = await api.join(matchId, (await identity()).token);
    const token = answer.token;
    if (!token) throw new Error("the service has not answered the join yet; look again in a moment");
    rememberSeat(matchId, answer.seat ?? seatOfToken(token), token, true);
    link.refresh();
    messages.show(`You joined as ${seatName(state.view.game, seatOfToken(token))}.`, "info");
    applyView((await api.match(matchId)));
  } catch (error) {
    messages.show(error.message);
  }
}

// --- state updates ------------------------------------------------------------------------------
/** A seat my identity holds but this browser has no token for (made elsewhere, or a create that
 * was still pending): the gateway gives its token to my credential. */
async function fetchMissingTokens(view) {
  const me = storedIdentity();
  const held = seatsOf(matchId);
  if (!me || state.fetchedTokens || !view.seats.some((p, seat) => p === me.player && !held[seat])) return;
  state.fetchedTokens = true;
  try {
    const answer = await api.tokens(matchId, me.token);
    answer.tokens.forEach((token, seat) => { if (token) rememberSeat(matchId, seat, token, true); });
    if (link) link.refresh();
    render();
    loadLegalActions();
  } catch (error) {
    messages.show(`Your seat tokens could not be fetched: ${error.message}`);
  }
}

function applyView(view) {
  if (state.view && view.seq < state.view.seq) return;
  fetchMissingTokens(view);
  learnNames(view.seats || [], render);
  const changed = !state.view || view.seq !== state.view.seq;
  state.view = view;
  if (changed) {
    state.legal = null;
    state.drafts = {};
    loadLegalActions();
  }
  render();
}

async function loadLegalActions() {
  const view = state.view;
  if (!canAct(view) || GAMES[view.game].needsLegalActions === false) return;
  const entry = seatsOf(matchId)[actingSeat(view)];
  try {
    const answer = await api.legalActions(matchId, entry.token);
    if (state.view.seq !== view.seq) return;
    state.legal = {
      seq: view.seq,
      actions: listOf(answer, "actions"),
      truncated: Boolean(answer && (answer.truncated || answer.more)),
    };
    render();
  } catch (error) {
    if (error.status === 401 || error.status === 403) messages.show(`Your seat token is not accepted: ${error.message}`);
  }
}

function onRecord(record) {
  state.log.push(record);
  if (record.view) applyView(record.view);
  else renderLog();
}

// --- rendering ---------------------------------------------------------------------------------
function render() {
  const view = state.view;
  if (!view) return;
  const focusedKey = document.activeElement && (document.activeElement.dataset?.key || document.activeElement.id);
  const game = GAMES[view.game];
  document.title = `${GAME_TITLES[view.game] || view.game} ${matchId} · plylog`;
  // What is on screen, for scripts and tests: the position's seq, and the seq whose legal actions are shown.
  document.body.dataset.seq = view.seq;
  document.body.dataset.legalSeq = state.legal && state.legal.seq === view.seq ? view.seq : "";
  const ctx = {
    matchId, names: view.seats, mySeats: mySeats(), actingSeat: actingSeat(view), canAct: canAct(view) && !state.busy,
    legal: state.legal && state.legal.seq === view.seq ? state.legal : null,
    local: state.local, act, rerender: render, fail: (text) => messages.show(text),
  };
  const { board, panel } = game.render(view, ctx);
  clear(root,
    h("section", { class: "match-head" },
      h("h1", {}, GAME_TITLES[view.game], " ", h("small", { class: "mono" }, matchId)),
      statusLine(view), seatsLine(view), live),
    messages.node,
    h("div", { class: "play" },
      h("div", { class: "board-wrap" }, board),
      h("aside", { class: "panel", "aria-label": "game panel" }, panel, seatControls(view))),
    h("section", { class: "log", "aria-label": "moves" }, h("h2", {}, "Moves"), h("ol", { id: "log", reversed: true })));
  renderLog();
  tickClocks();
  restoreDrafts();
  if (focusedKey) {
    const again = root.querySelector(`[data-key="${CSS.escape(focusedKey)}"]`) || document.getElementById(focusedKey);
    if (again) again.focus();
  }
}

function statusLine(view) {
  let text;
  if (view.status === "over") text = `Game over: ${outcomeText(view)}`;
  else if (view.status === "waiting") text = "Waiting for an opponent to take the open seat.";
  else {
    const moving = (view.to_move || []).map((seat) => `${seatName(view.game, seat)} (${view.seats[seat]})`).join(" and ");
    text = canAct(view) ? `Your move as ${seatName(view.game, actingSeat(view))}.` : `${moving} to move.`;
  }
  const score = view.status === "over" ? GAMES[view.game].scoreText(view) : "";
  return h("p", { class: "status", id: "status" }, text, score ? h("span", { class: "score" }, ` · ${score}`) : null);
}

function seatsLine(view) {
  const mine = mySeats();
  return h("ul", { class: "seats" }, [0, 1].map((seat) => {
    const moving = view.status === "active" && (view.to_move || []).includes(seat);
    return h("li", { class: moving ? "moving" : "", dataset: { seat } },
      h("span", { class: "turn-mark", "aria-hidden": "true" }, moving ? "▶" : ""),
      h("strong", {}, seatName(view.game, seat)), " ", view.seats[seat] ? shownAs(view.seats[seat]) : h("em", {}, "open"),
      mine.includes(seat) ? h("span", { class: "badge" }, "you") : null,
      String(view.seats[seat]).startsWith("bot:") ? h("span", { class: "badge bot", title: "a bot plays this seat" }, "computer") : null,
      view.clock ? h("span", { class: "clock mono", dataset: { seat }, "aria-label": `${seatName(view.game, seat)} clock` }) : null);
  }));
}

function seatControls(view) {
  const mine = mySeats();
  const out = [];
  const me = storedIdentity();
  const invited = view.invited || [null, null];
  const open = [0, 1].filter((seat) => view.seats[seat] === null);
  const forMe = open.filter((seat) => !invited[seat] || (me && invited[seat] === me.player));
  if (view.status === "waiting" && forMe.length && !mine.length) {
    const reserved = me && forMe.some((seat) => invited[seat] === me.player);
    out.push(h("p", {}, h("button", { id: "join", type: "button", class: "primary", onclick: join },
      reserved ? "Join: this seat is kept for you" : `Join as ${playerName()}`)));
  }
  for (const seat of open.filter((seat) => invited[seat] && !(me && invited[seat] === me.player))) {
    out.push(h("div", { class: "share" },
      h("p", {}, `${seatName(view.game, seat)} is kept for ${invited[seat]}: send them this page's link; they join with their own id.`),
      h("p", {}, h("input", { class: "seat-link mono", readonly: true, value: location.href, "aria-label": "match link",
        onfocus: (e) => e.target.select() }), " ", copyButton(location.href))));
  }
  if (mine.length && view.status !== "over") {
    if (view.status === "waiting") {
      out.push(h("p", {}, h("button", { type: "button", onclick: () => lifecycle("abort") }, "Abort the match")));
    } else if (state.confirmResign) {
      out.push(h("p", {}, "Resign this match? ",
        h("button", { id: "resign-confirm", type: "button", class: "danger", onclick: () => lifecycle("resign") }, "Yes, resign"), " ",
        h("button", { type: "button", onclick: () => { state.confirmResign = false; render(); } }, "No")));
    } else {
      out.push(h("p", {}, h("button", { id: "resign", type: "button", onclick: () => { state.confirmResign = true; render(); } }, "Resign")));
    }
  }
  if (!mine.length) out.push(h("p", { class: "hint" }, "You are watching this match."));
  out.push(h("p", {}, h("a", { href: `/replay.html?id=${encodeURIComponent(matchId)}` }, "Replay this match"), " · ",
    h("a", { href: `/leaderboards.html?game=${view.game}` }, "Leaderboards")));
  return h("div", { class: "seat-controls" }, out);
}

function renderLog() {
  const list = document.getElementById("log");
  if (!list || !state.view) return;
  const game = state.view.game;
  const items = [];
  for (const record of state.log.slice(-40).reverse()) {
    for (const event of [...(record.events || [])].reverse()) {
      items.push(h("li", { value: record.seq }, h("span", { class: "who" }, record.player || ""), " ", describeEvent(game, event)));
    }
  }
  clear(list, items);
}

// A correspondence clock (days per move): the seat to move spends time from since_ms, which is the
// end of its vacation while it is on one (the view's deadline_ms is since_ms + its remaining_ms).
function correspondenceClock(node, view, seat) {
  const clock = view.clock;
  const now = Date.now();
  const until = clock.vacation_until_ms[seat];
  const away = until !== null && until > now;
  const running = view.status === "active" && (view.to_move || []).includes(seat) && clock.since_ms !== null;
  const left = clock.remaining_ms[seat] - (running ? Math.max(0, now - clock.since_ms) : 0);
  const vacation = away ? ` · on vacation until ${new Date(until).toLocaleString()}` : "";
  node.textContent = `${formatDays(left)} left${vacation}` + (running && left <= 0 ? " (time up)" : "");
  node.title = `${clock.days_per_move} day(s) per move; ${clock.vacation_days_left[seat]} vacation day(s) left`;
  node.classList.toggle("running", running && !away);
  node.classList.toggle("low", left < 3600000);
}

function tickClocks() {
  const view = state.view;
  if (!view || !view.clock) return;
  const clock = view.clock;
  for (const node of root.querySelectorAll(".clock")) {
    const seat = Number(node.dataset.seat);
    if (clock.kind === "correspondence") {
      correspondenceClock(node, view, seat);
      continue;
    }
    const running = view.status === "active" && (view.to_move || []).includes(seat) && clock.since_ms !== null;
    const left = clock.remaining_ms[seat] - (running ? Date.now() - clock.since_ms : 0);
    node.textContent = formatClock(left) + (running && left <= 0 ? " (time up)" : "");
    node.classList.toggle("running", running);
    node.classList.toggle("low", left < 10000);
  }
}

// --- start --------------------------------------------------------------------------------------
async function start() {
  document.body.prepend(header("match"));
  document.body.append(root);
  if (!matchId) {
    root.append(h("p", { class: "msg error" }, "No match id in the address (match.html?id=…)."));
    return;
  }
  takeTokenFromFragment();
  root.append(messages.node);
  let view;
  for (let attempt = 1; !view; attempt++) {
    try {
      view = await api.match(matchId);
    } catch (error) {
      // A match created a moment ago may not be projected yet: look again a few times.
      if (error.status !== 404 || attempt >= 5) {
        messages.show(error.status === 404 ? `There is no match ${matchId}: ${error.message}` : error.message);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  try {
    state.log = listOf(await api.events(matchId), "results");
  } catch {
    state.log = [];
  }
  applyView(view);
  const fromSeq = state.log.length ? Math.max(view.seq, state.log[state.log.length - 1].seq) : view.seq;
  link = followLive(matchId, {
    fromSeq,
    seats: () => mySeats().map((seat) => ({ seat, token: seatsOf(matchId)[seat].token })),
    onRecord,
    onView: applyView,
    onState: (s) => {
      live.textContent = { connecting: "connecting…", live: "● live", reconnecting: "connection lost — reconnecting…" }[s];
      live.dataset.state = s;
    },
    // for scripts and tests: how this page plays ("socket": the seat socket; "sse": stream + POST)
    onTransport: (name) => {
      document.body.dataset.transport = name;
      live.title = name === "socket" ? "live over the seat socket" : "live over the event stream";
    },
  });
  setInterval(tickClocks, 200);
}

start();
