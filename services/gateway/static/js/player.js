// A player's page: their stats per game, a graph of their rating after each rated match (plain
// SVG), and their recent matches.

import { api, listOf } from "./api.js";
import { outcomeText } from "./games/index.js";
import { GAME_TITLES, clear, formatTime, h, header, messageArea, s } from "./ui.js";

const messages = messageArea();
const root = h("main", { id: "player", class: "lobby" });

/** history: [{n, rating, rd, match_id, result}], oldest first. */
export function ratingGraph(rated, game) {
  // every player starts at 1500 (Glicko-2): the graph starts there when the history is whole
  const history = rated.length && rated[0].n === 1 ? [{ n: 0, rating: 1500, result: "start", opponent: "nobody" }, ...rated] : rated;
  const width = 640, height = 220, left = 48, right = 16, top = 12, bottom = 28;
  const ratings = history.map((e) => e.rating);
  const low = Math.floor((Math.min(...ratings) - 20) / 50) * 50, high = Math.ceil((Math.max(...ratings) + 20) / 50) * 50;
  const x = (i) => left + (history.length === 1 ? 0 : (i * (width - left - right)) / (history.length - 1));
  const y = (r) => top + ((high - r) * (height - top - bottom)) / (high - low || 1);
  const points = history.map((e, i) => `${x(i).toFixed(1)},${y(e.rating).toFixed(1)}`).join(" ");
  return s("svg", { class: "rating-graph", "data-game": game, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `${GAME_TITLES[game] || game} rating after each of ${rated.length} rated matches, now ${ratings.at(-1)}` },
    s("line", { class: "axis", x1: left, y1: height - bottom, x2: width - right, y2: height - bottom }),
    s("line", { class: "axis", x1: left, y1: top, x2: left, y2: height - bottom }),
    s("text", { x: left - 6, y: y(high) + 4, "text-anchor": "end" }, String(high)),
    s("text", { x: left - 6, y: y(low) + 4, "text-anchor": "end" }, String(low)),
    s("text", { x: width - right, y: height - 8, "text-anchor": "end" }, `${rated.length} rated matches`),
    s("polyline", { class: "series-a", fill: "none", points }),
    history.map((e, i) => s("circle", { class: "marker series-a", cx: x(i), cy: y(e.rating), r: 3 },
      s("title", {}, `#${e.n} ${e.result} vs ${e.opponent}: ${e.rating}`))));
}

async function gameSection(playerId, game, stats) {
  const history = listOf(await api.ratingHistory(playerId, game), "history");
  const line = `${stats.played} played: ${stats.wins} won, ${stats.losses} lost, ${stats.draws} drawn; rating ${Math.round(stats.rating)} (± ${Math.round(2 * stats.rd)})`;
  return h("section", { class: "card" }, h("h2", {}, GAME_TITLES[game] || game), h("p", { class: "stats" }, line),
    history.length ? ratingGraph(history, game) : h("p", { class: "hint" }, "no rated match yet"));
}

function recentRow(match) {
  const id = match.match_id;
  return h("tr", {}, h("td", {}, GAME_TITLES[match.game] || match.game),
    h("td", {}, (match.seats || []).map((p) => p || "open").join(" vs ")),
    h("td", {}, match.outcome ? outcomeText(match) : ""), h("td", {}, formatTime(match.ended_at)),
    h("td", {}, h("a", { href: `/replay.html?id=${encodeURIComponent(id)}` }, "Replay")));
}

async function start() {
  document.body.prepend(header("player"));
  document.body.append(root);
  const playerId = new URLSearchParams(location.search).get("id") || "";
  document.title = `plylog — ${playerId}`;
  root.append(messages.node, h("h1", {}, playerId));
  if (!playerId) return messages.show("No player given: /player.html?id=<player id>");
  try {
    const found = await api.player(playerId).catch((error) => (error.status === 404 ? { games: {} } : Promise.reject(error)));
    for (const [game, stats] of Object.entries(found.games || {})) root.append(await gameSection(playerId, game, stats));
    const recent = listOf(await api.recent(playerId), "matches");
    root.append(h("section", { class: "card" }, h("h2", {}, "Recent matches"),
      h("table", { class: "matches", id: "recent" }, h("tbody", {}, recent.length ? recent.map(recentRow)
        : h("tr", {}, h("td", { class: "hint" }, "none"))))));
  } catch (error) {
    messages.show(error.message);
  }
}

start();
