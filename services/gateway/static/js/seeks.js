// The lobby's seeks and pools (docs/matchmaking.md): post a seek or join a pool, and the open
// seeks and waiting pools, live (the gateway's /v1/lobby/stream, event `lobby`), with Accept
// buttons. The matchmaker service decides every submission and creates the matches.

import { api } from "./api.js";
import { GAMES } from "./games/index.js";
import { GAME_TITLES, clear, formatTime, h, identity, learnNames, shownAs, storedIdentity } from "./ui.js";

const DAYS = [1, 2, 3, 5, 7, 14];

function clockText(clock) {
  if (!clock) return "no clock";
  if (clock.kind === "correspondence") return `${clock.days_per_move} day${clock.days_per_move > 1 ? "s" : ""} per move`;
  return `${clock.initial_s / 60} min + ${clock.increment_s} s`;
}

function showMade(messages, answer, me) {
  const made = (answer.events || []).find((e) => e.type === "match_made");
  if (!made) return false;
  messages.show(`Match ${made.match_id} made: ${made.seats.join(" vs ")}.`, "info");
  if (made.seats.includes(me.player)) location.href = `/match.html?id=${encodeURIComponent(made.match_id)}`;
  return true;
}

/** The form: a game (its options from the new-match form), days per move, a rating range. */
export function seekForm(messages, forms) {
  const game = h("select", { id: "seek-game" }, Object.entries(GAME_TITLES).map(([id, title]) => h("option", { value: id }, title)));
  const days = h("select", { id: "seek-days" }, DAYS.map((n) => h("option", { value: String(n) }, `${n} day${n > 1 ? "s" : ""} per move`)));
  const low = h("input", { id: "seek-min", type: "number", min: 0, max: 4000, size: 5, placeholder: "any" });
  const high = h("input", { id: "seek-max", type: "number", min: 0, max: 4000, size: 5, placeholder: "any" });
  const botAfter = h("select", { id: "pool-bot-after", title: "in the pool: the computer takes the other seat if no person came" },
    h("option", { value: "" }, "never"), [5, 30, 60, 120, 300].map((n) => h("option", { value: String(n) }, `after ${n} s`)));
  const offer = () => {
    const options = (forms[game.value] || (forms[game.value] = GAMES[game.value].optionsForm())).options();
    const offer = { game: game.value, options, clock: { kind: "correspondence", days_per_move: Number(days.value) } };
    if (low.value) offer.rating_min = Number(low.value);
    if (high.value) offer.rating_max = Number(high.value);
    return offer;
  };
  const send = async (what) => {
    try {
      const me = await identity();
      const pool = offer();
      if (what === "pool" && botAfter.value) {
        const bots = ((await api.bots(game.value)).bots || {})[game.value] || [];
        if (!bots.length) throw new Error(`no computer player for ${GAME_TITLES[game.value]} is running`);
        Object.assign(pool, { bot: bots[0].player, bot_after_s: Number(botAfter.value) });
      }
      const answer = what === "seek" ? await api.postSeek(me.token, offer()) : await api.joinPool(me.token, pool);
      if (!showMade(messages, answer, me)) {
        messages.show(answer.status === "pending" ? "Sent; the matchmaker has not answered yet."
          : what === "seek" ? "Your seek is open: anyone in range may accept it." : "You wait in the pool.", "info");
      }
    } catch (error) {
      messages.show(`Not done: ${error.message}`);
    }
  };
  const leave = async () => {
    try {
      await api.leavePool((await identity()).token);
      messages.show("You left the pool.", "info");
    } catch (error) {
      messages.show(`Not done: ${error.message}`);
    }
  };
  return h("form", { id: "seek-form", class: "card", onsubmit: (e) => { e.preventDefault(); send("seek"); } },
    h("h2", {}, "Find an opponent"),
    h("p", {}, h("label", { for: "seek-game" }, "Game "), game, " (options as in New match)"),
    h("p", {}, h("label", { for: "seek-days" }, "Clock "), days),
    h("p", {}, h("label", { for: "seek-min" }, "Opponent rating from "), low, h("label", { for: "seek-max" }, " to "), high),
    h("p", {}, h("label", { for: "pool-bot-after" }, "In the pool, play the computer "), botAfter),
    h("p", {}, h("button", { id: "seek-button", type: "submit", class: "primary" }, "Post a seek"), " ",
      h("button", { id: "pool-button", type: "button", onclick: () => send("pool") }, "Join the pool"), " ",
      h("button", { id: "leave-pool", type: "button", class: "small", onclick: leave }, "Leave the pool")));
}

export function seeksSection() {
  return h("section", { class: "card" }, h("h2", {}, "Seeks and pools ", h("span", { id: "lobby-state", class: "hint" }, "")),
    h("table", { class: "matches" },
      h("thead", {}, h("tr", {}, ["Game", "Player", "Rating", "Clock", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", { id: "list-seeks" })),
    h("ul", { id: "list-pools" }));
}

let messagesArea = null;

async function accept(seekId) {
  try {
    const me = await identity();
    const answer = await api.acceptSeek(me.token, seekId);
    if (!showMade(messagesArea, answer, me)) messagesArea.show("Sent; the matchmaker has not answered yet.", "info");
  } catch (error) {
    messagesArea.show(`Could not accept the seek: ${error.message}`);
  }
}

async function cancel(seekId) {
  try {
    await api.cancelSeek((await identity()).token, seekId);
  } catch (error) {
    messagesArea.show(`Could not cancel the seek: ${error.message}`);
  }
}

/** "Strands" or, when the seek or pool states a rules version, "Strands (strands/2)". */
function gameText(entry) {
  const title = GAME_TITLES[entry.game] || entry.game;
  return entry.rules ? `${title} (${entry.rules})` : title;
}

let latest = null; // the newest lobby drawn: names that come later redraw it, not an older one

function show(view) {
  latest = view;
  // names from players' profiles (docs/personal-data.md): drawn with ids first, again once known
  learnNames([...view.seeks.map((s) => s.player), ...view.pools.flatMap((p) => p.waiting.map((w) => w.player))],
    () => show(latest));
  const mine = (storedIdentity() || {}).player;
  const seeks = document.getElementById("list-seeks");
  if (seeks) {
    clear(seeks, view.seeks.length ? view.seeks.map((seek) => h("tr", { dataset: { seek: seek.seek_id } },
      h("td", {}, gameText(seek)),
      h("td", {}, h("a", { href: `/player.html?id=${encodeURIComponent(seek.player)}` }, shownAs(seek.player))),
      h("td", {}, `${seek.rating}` + (seek.rating_min !== null || seek.rating_max !== null
        ? ` (wants ${seek.rating_min ?? "any"}–${seek.rating_max ?? "any"})` : "")),
      h("td", {}, clockText(seek.clock), h("span", { class: "hint" }, ` until ${formatTime(seek.expires_at)}`)),
      h("td", {}, seek.player === mine
        ? h("button", { type: "button", class: "small", "data-cancel": seek.seek_id, onclick: () => cancel(seek.seek_id) }, "Cancel")
        : h("button", { type: "button", class: "small primary", "data-accept": seek.seek_id, onclick: () => accept(seek.seek_id) }, "Accept"))))
      : h("tr", {}, h("td", { colspan: 5, class: "hint" }, "no open seeks")));
  }
  const pools = document.getElementById("list-pools");
  if (pools) {
    clear(pools, view.pools.map((pool) => h("li", { dataset: { pool: pool.pool_id } },
      `${gameText(pool)}, ${clockText(pool.clock)}: ${pool.waiting_count ?? pool.waiting.length} waiting (`,
      pool.waiting.map((w) => `${shownAs(w.player)} ${w.rating}`).join(", "), ")")));
  }
}

/** Follows the lobby's SSE stream (EventSource reconnects by itself). */
export function followLobby(messages) {
  messagesArea = messages;
  const state = document.getElementById("lobby-state");
  const source = new EventSource("/v1/lobby/stream");
  source.addEventListener("lobby", (event) => {
    if (state) state.textContent = "(live)";
    show(JSON.parse(event.data));
  });
  source.onerror = () => { if (state) state.textContent = "(reconnecting)"; };
  return source;
}
