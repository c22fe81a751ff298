// A tournament's page: standings, the current round's pairings (each a link to its match), the
// crosstable; live over the tournament's SSE stream (/v1/tournaments/{id}/stream).

import { enter, tournamentApi } from "./tournaments.js";
import { GAME_TITLES, clear, h, header, learnNames, messageArea, query, shownAs, storedIdentity } from "./ui.js";

const messages = messageArea();
const id = query("id");
const root = h("main", { id: "tournament", class: "lobby" });

const points = (p) => (p === null || p === undefined ? "" : String(p / 2).replace(".5", "½"));

function standingsTable(view) {
  const columns = Object.keys(view.standings[0] || {}).filter((k) => !["rank", "player"].includes(k));
  return h("table", { class: "matches", id: "standings" },
    h("thead", {}, h("tr", {}, ["#", "Player", ...columns].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, view.standings.map((row) => h("tr", { dataset: { player: row.player } },
      h("td", {}, String(row.rank)), h("td", {}, shownAs(row.player)),
      columns.map((c) => h("td", { dataset: { column: c } }, typeof row[c] === "object" ? JSON.stringify(row[c]) : String(row[c])))))));
}

function pairingsTable(view) {
  if (!view.current.length) return h("p", { class: "hint" }, view.status === "open" ? "Pairings appear when it starts." : "No pairings.");
  return h("table", { class: "matches", id: "pairings" },
    h("thead", {}, h("tr", {}, ["Board", "First", "Second", "Result", ""].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, view.current.map((p) => h("tr", { dataset: { match: p.match_id } },
      h("td", {}, `${p.board}${p.game > 1 ? ` (game ${p.game})` : ""}`),
      h("td", {}, shownAs(p.seats[0])), h("td", {}, shownAs(p.seats[1])),
      h("td", {}, p.result ? `${points(p.result.points[0])}–${points(p.result.points[1])} (${p.result.how})` : "playing"),
      h("td", {}, h("a", { href: `/match.html?id=${encodeURIComponent(p.match_id)}` }, p.result ? "View" : "Open"))))));
}

function crosstableTable(view) {
  const players = view.standings.map((r) => r.player);
  const cell = (player, other) => {
    const games = (view.crosstable[player] || []).filter((g) => g.opponent === other);
    return games.map((g) => (g.result === "pending" ? "…" : g.result === "win" ? "1" : g.result === "draw" ? "½" : "0")).join(" ");
  };
  return h("table", { class: "matches", id: "crosstable" },
    h("thead", {}, h("tr", {}, h("th", {}, ""), players.map((_, i) => h("th", { scope: "col" }, String(i + 1))))),
    h("tbody", {}, players.map((player, i) => h("tr", {},
      h("th", { scope: "row" }, `${i + 1}. ${shownAs(player)}`),
      players.map((other) => h("td", {}, player === other ? "—" : cell(player, other)))))));
}

let latest = null; // the newest view drawn: names that come later redraw it, not an older one

function render(view) {
  latest = view;
  // names from players' profiles (docs/personal-data.md): drawn with ids first, again once known
  learnNames(view.entrants.map((e) => e.player), () => render(latest));
  const s = view.settings;
  const me = storedIdentity();
  const entered = me && view.entrants.some((e) => e.player === me.player && e.status === "active");
  const enterButton = view.status !== "over" && !entered
    ? h("button", { type: "button", class: "primary", id: "enter", onclick: async () => { if (await enter(id, messages)) load(); } }, "Register")
    : "";
  clear(root, messages.node,
    h("section", { class: "card" },
      h("h2", {}, s.name),
      h("p", { id: "summary" }, `${s.format.replace("_", " ")} of ${GAME_TITLES[s.game] || s.game} · ${view.status}`,
        view.status === "running" ? ` · round ${view.round}` : "", view.winner ? ` · won by ${shownAs(view.winner)}` : ""),
      enterButton),
    h("section", { class: "card" }, h("h2", {}, "Standings"), standingsTable(view)),
    h("section", { class: "card" }, h("h2", {}, view.status === "open" ? "Pairings" : `Round ${view.round}`), pairingsTable(view)),
    h("section", { class: "card" }, h("h2", {}, "Crosstable"), crosstableTable(view)));
}

async function load() {
  try {
    render(await tournamentApi.get(id));
  } catch (error) {
    messages.show(`No tournament ${id}: ${error.message}`);
  }
}

function follow() {
  const source = new EventSource(`/v1/tournaments/${encodeURIComponent(id)}/stream`);
  source.addEventListener("tournament", (event) => render(JSON.parse(event.data)));
}

document.body.prepend(header("tournament"));
document.body.append(root);
root.append(messages.node);
load().then(follow);
