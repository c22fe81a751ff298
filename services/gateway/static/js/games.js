// "My games": the player's unfinished matches, those waiting for their move first, with the time
// left (days for a correspondence clock); the count of those waiting is in the page title.

import { api, listOf } from "./api.js";
import { GAME_TITLES, clear, h, header, identity, messageArea } from "./ui.js";

const messages = messageArea();
const body = h("tbody", { id: "my-games" });
const root = h("main", { id: "games", class: "lobby" });

export function timeLeft(match) {
  const ms = match.time_left_ms;
  if (ms === null || ms === undefined) return "no clock";
  if (match.days_left !== null && match.days_left !== undefined) return `${match.days_left.toFixed(1)} days left`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")} left`;
}

function row(match) {
  const link = h("a", { href: `/match.html?id=${encodeURIComponent(match.match_id)}` }, match.your_move ? "Play" : "View");
  const opponent = match.opponent
    ? h("a", { href: `/player.html?id=${encodeURIComponent(match.opponent)}` }, match.opponent) : "open seat";
  return h("tr", { dataset: { match: match.match_id, yourMove: String(match.your_move) }, class: match.your_move ? "your-move" : "" },
    h("td", {}, match.your_move ? "your move" : match.status === "waiting" ? "waiting for a player" : "their move"),
    h("td", {}, GAME_TITLES[match.game] || match.game),
    h("td", {}, opponent),
    h("td", { class: "time-left" }, match.your_move ? timeLeft(match) : ""),
    h("td", {}, link));
}

async function refresh() {
  let me;
  try {
    me = await identity();
  } catch (error) {
    return messages.show(`No identity for you: ${error.message}`);
  }
  try {
    const answer = await api.myGames(me.token);
    const matches = listOf(answer, "matches");
    document.title = `(${answer.your_move}) plylog — my games`;
    clear(body, matches.length ? matches.map(row) : h("tr", {}, h("td", { colspan: 5, class: "hint" }, "no unfinished matches")));
  } catch (error) {
    messages.show(error.message);
  }
}

function start() {
  document.body.prepend(header("games"));
  document.body.append(root);
  root.append(messages.node, h("section", { class: "card" }, h("h2", {}, "My games"),
    h("table", { class: "matches" },
      h("thead", {}, h("tr", {}, ["", "Game", "Opponent", "Time", ""].map((t) => h("th", { scope: "col" }, t)))), body)));
  refresh();
  setInterval(() => { if (!document.hidden) refresh(); }, 5000);
}

start();
