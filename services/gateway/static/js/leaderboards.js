// Leaderboards (TOP 20 by rating, wins and games played) and daily activity, per game.

import { api, listOf } from "./api.js";
import { activityChart, activityTable } from "./chart.js";
import { GAME_TITLES, clear, h, header, learnNames, messageArea, query, shownAs } from "./ui.js";

const messages = messageArea();
const root = h("main", { id: "leaderboards", class: "leaderboards" });
const BOARDS = [["rating", "Rating"], ["wins", "Wins"], ["played", "Games played"]];

function entryName(entry) {
  return entry.player ?? entry.player_id ?? entry.member ?? entry.name;
}

function entryValue(entry, by) {
  const value = entry[by] ?? entry.score ?? entry.value;
  return typeof value === "number" && by === "rating" ? Math.round(value) : value;
}

async function board(game, by, title) {
  const body = h("tbody", {});
  const table = h("table", { class: "board-table", id: `lb-${by}` },
    h("caption", {}, `Top 20 by ${title.toLowerCase()}`),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "#"), h("th", { scope: "col" }, "Player"), h("th", { scope: "col" }, title))),
    body);
  try {
    const entries = listOf(await api.leaderboard(game, by, 20), "entries");
    await learnNames(entries.map(entryName), () => {});
    clear(body, entries.length ? entries.map((entry, i) => h("tr", {},
      h("td", {}, String(entry.rank ?? i + 1)),
      h("td", {}, h("a", { href: `/leaderboards.html?game=${game}&player=${encodeURIComponent(entryName(entry))}` }, shownAs(entryName(entry)))),
      h("td", { class: "num" }, String(entryValue(entry, by)))))
      : h("tr", {}, h("td", { colspan: 3, class: "hint" }, "no finished rated matches yet")));
  } catch (error) {
    clear(body, h("tr", {}, h("td", { colspan: 3, class: "msg error" }, error.message)));
  }
  return h("section", { class: "card" }, table);
}

async function activity(game) {
  const section = h("section", { class: "card activity", id: "activity" }, h("h2", {}, `${GAME_TITLES[game]}: activity per day`));
  try {
    const data = await api.activity(game);
    const days = listOf(data, "days").map((d) => ({ ...d, day: d.day ?? d.date }));
    if (!days.length) {
      section.append(h("p", { class: "hint" }, "No activity yet."));
      return section;
    }
    const matches = [["started", "matches started"], ["finished", "matches finished"]];
    const moves = [["moves", "moves"]];
    const totals = data.totals || {};
    section.append(h("p", { id: "totals" }, `All time: ${totals.started ?? 0} matches started, ${totals.finished ?? 0} finished, ` +
      `${totals.moves ?? 0} moves, ${totals.rejected ?? 0} rejected actions.`));
    section.append(h("div", { class: "columns two" },
      h("figure", {}, h("figcaption", {}, "Matches per day"), activityChart(days, matches, `${GAME_TITLES[game]} matches started and finished per day`)),
      h("figure", {}, h("figcaption", {}, "Moves per day"), activityChart(days, moves, `${GAME_TITLES[game]} moves per day`))),
      h("details", {}, h("summary", {}, "The numbers"), activityTable(days, [...matches, ...moves], "Activity per day (UTC)")));
  } catch (error) {
    section.append(h("p", { class: "msg error" }, error.message));
  }
  return section;
}

async function playerCard(playerId) {
  const card = h("section", { class: "card", id: "player" }, h("h2", {}, `Player ${playerId}`));
  try {
    const data = await api.player(playerId);
    const games = data.games || data;
    const rows = Object.entries(GAME_TITLES).map(([game, title]) => {
      const g = games[game] || {};
      return h("tr", {}, h("th", { scope: "row" }, title),
        ["played", "wins", "losses", "draws"].map((k) => h("td", { class: "num" }, String(g[k] ?? 0))),
        h("td", { class: "num" }, g.rating !== undefined ? String(Math.round(g.rating)) : "—"));
    });
    card.append(h("table", { class: "board-table" },
      h("thead", {}, h("tr", {}, ["Game", "Played", "Wins", "Losses", "Draws", "Rating"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows)));
  } catch (error) {
    card.append(h("p", { class: "msg error" }, error.message));
  }
  return card;
}

async function start() {
  document.body.prepend(header("leaderboards"));
  document.body.append(root);
  const game = GAME_TITLES[query("game")] ? query("game") : "strands";
  const player = query("player");
  root.append(messages.node,
    h("h1", {}, "Leaderboards"),
    h("nav", { class: "tabs", "aria-label": "games" }, Object.entries(GAME_TITLES).map(([id, title]) =>
      h("a", { href: `/leaderboards.html?game=${id}`, "aria-current": id === game ? "page" : undefined }, title))));
  const [boards, chart, card] = await Promise.all([
    Promise.all(BOARDS.map(([by, title]) => board(game, by, title))),
    activity(game),
    player ? playerCard(player) : null,
  ]);
  root.append(...(card ? [card] : []), h("h2", {}, `${GAME_TITLES[game]}: top players`), h("div", { class: "columns three" }, boards), chart);
  document.body.dataset.loaded = "true";
}

start();
