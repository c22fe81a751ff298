// The lobby: create a match of any game with its options, list open / running / finished
// matches, join open ones.

import { api, listOf } from "./api.js";
import { GAMES, outcomeText } from "./games/index.js";
import { GAME_TITLES, clear, formatTime, h, header, identity, messageArea, rememberSeat, seatOfToken } from "./ui.js";

const messages = messageArea();
const root = h("main", { id: "lobby", class: "lobby" });
const forms = {};
let gameFilter = "";

function createForm() {
  const gameSelect = h("select", { id: "create-game" }, Object.entries(GAME_TITLES).map(([id, title]) => h("option", { value: id }, title)));
  const optionBox = h("div", { id: "game-options" });
  const showOptions = () => {
    const game = gameSelect.value;
    forms[game] = forms[game] || GAMES[game].optionsForm();
    clear(optionBox, forms[game].node);
  };
  const botSelect = h("select", { id: "create-bot", "aria-label": "play against the computer" },
    h("option", { value: "" }, "a person"));
  const showBots = async () => {
    const game = gameSelect.value;
    let bots = [];
    try {
      bots = ((await api.bots(game)).bots || {})[game] || [];
    } catch {
      bots = [];
    }
    if (gameSelect.value !== game) return;
    clear(botSelect, h("option", { value: "" }, "a person"),
      bots.map((bot, level) => h("option", { value: bot.player, title: bot.description },
        `the computer: ${bot.id} (level ${level + 1} of ${bots.length})`)));
  };
  gameSelect.addEventListener("change", () => { showOptions(); showBots(); });
  showOptions();
  showBots();

  const mySeat = h("select", { id: "create-seat" },
    h("option", { value: "0" }, "first (moves first)"), h("option", { value: "1" }, "second"),
    h("option", { value: "both" }, "both (hot seat)"));
  const opponent = h("input", { id: "create-opponent", placeholder: "empty: anyone may join", maxlength: 64, size: 24,
    title: "a player's id (e.g. ben~a2b3c4): the seat is kept for them; they join it themselves" });
  const clockOn = h("input", { id: "clock-on", type: "checkbox" });
  const minutes = h("input", { id: "clock-minutes", type: "number", min: 0.1, step: "any", value: 10, size: 5 });
  const increment = h("input", { id: "clock-increment", type: "number", min: 0, step: "any", value: 5, size: 5 });
  const days = h("select", { id: "clock-days", title: "a correspondence clock: this many days for each move" },
    h("option", { value: "" }, "—"), [1, 2, 3, 5, 7, 14].map((n) => h("option", { value: String(n) }, String(n))));
  const submit = async (event) => {
    event.preventDefault();
    const game = gameSelect.value;
    const other = botSelect.value || opponent.value.trim() || null;
    const seatsFor = (me) => mySeat.value === "both" ? [me, me] : mySeat.value === "0" ? [me, other] : [other, me];
    let me;
    try {
      me = await identity();
    } catch (error) {
      return messages.show(`No identity for you: ${error.message}`);
    }
    const clock = days.value ? { kind: "correspondence", days_per_move: Number(days.value) }
      : clockOn.checked ? { initial_s: Number(minutes.value) * 60, increment_s: Number(increment.value) } : null;
    let options;
    try {
      options = forms[game].options();
    } catch (error) {
      return messages.show(error.message);
    }
    try {
      const answer = await api.createMatch(me.token, game, options, seatsFor(me.player), clock);
      storeTokens(answer);
      location.href = `/match.html?id=${encodeURIComponent(answer.match_id)}`;
    } catch (error) {
      messages.show(`The match was not created: ${error.message}`);
    }
  };
  return h("form", { id: "create", class: "card", onsubmit: submit },
    h("h2", {}, "New match"),
    h("p", {}, h("label", { for: "create-game" }, "Game "), gameSelect),
    optionBox,
    h("p", {}, h("label", { for: "create-seat" }, "Your seat "), mySeat),
    h("p", {}, h("label", { for: "create-bot" }, "Play against "), botSelect),
    h("p", {}, h("label", { for: "create-opponent" }, "Opponent (a person) "), opponent),
    h("p", {}, clockOn, h("label", { for: "clock-on" }, " Clock: "),
      h("label", { for: "clock-minutes" }, "minutes "), minutes, " ", h("label", { for: "clock-increment" }, "+ seconds per move "), increment),
    h("p", {}, h("label", { for: "clock-days" }, "Or by correspondence, days per move: "), days),
    h("p", {}, h("button", { id: "create-button", type: "submit", class: "primary" }, "Create match")));
}

/** Keeps the seat tokens of a new match (the gateway gives those of my own seats only). */
function storeTokens(answer) {
  (answer.tokens || []).forEach((token, seat) => {
    if (token) rememberSeat(answer.match_id, seatOfToken(token) ?? seat, token, true);
  });
}

async function joinMatch(matchId) {
  try {
    const answer = await api.join(matchId, (await identity()).token);
    if (!answer.token) throw new Error("the service has not answered the join yet; try again in a moment");
    rememberSeat(matchId, answer.seat ?? seatOfToken(answer.token), answer.token, true);
    location.href = `/match.html?id=${encodeURIComponent(matchId)}`;
  } catch (error) {
    messages.show(`Could not join ${matchId}: ${error.message}`);
  }
}

function matchRow(match, status) {
  const id = match.match_id;
  const seats = (match.seats || []).map((p) => (p && p.startsWith("bot:") ? `🤖 ${p}` : p || "open")).join(" vs ");
  const when = status === "recent" ? match.ended_at : status === "open" ? match.created_at : match.started_at;
  const action = status === "open"
    ? h("button", { type: "button", class: "small primary", "data-join": id, onclick: () => joinMatch(id) }, "Join")
    : h("a", { href: `/match.html?id=${encodeURIComponent(id)}` }, status === "active" ? "Watch" : "View");
  return h("tr", { dataset: { match: id } },
    h("td", {}, GAME_TITLES[match.game] || match.game),
    h("td", { class: "mono" }, id),
    h("td", {}, seats),
    h("td", {}, status === "recent" && match.outcome ? outcomeText(match) : formatTime(when)),
    h("td", {}, action, " ", h("a", { href: `/replay.html?id=${encodeURIComponent(id)}` }, "Replay")));
}

async function refreshLists() {
  for (const status of ["open", "active", "recent"]) {
    const body = document.getElementById(`list-${status}`);
    if (!body) continue;
    try {
      const matches = listOf(await api.matches(status, gameFilter || undefined, 30), "matches");
      clear(body, matches.length ? matches.map((m) => matchRow(m, status))
        : h("tr", {}, h("td", { colspan: 5, class: "hint" }, "none")));
    } catch (error) {
      clear(body, h("tr", {}, h("td", { colspan: 5, class: "msg error" }, error.message)));
    }
  }
}

function listSection(status, title) {
  return h("section", { class: "card" }, h("h2", {}, title),
    h("table", { class: "matches" },
      h("thead", {}, h("tr", {}, ["Game", "Match", "Players", status === "recent" ? "Result" : "Since", ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", { id: `list-${status}` })));
}

function start() {
  document.body.prepend(header("lobby"));
  const filter = h("select", { id: "game-filter", onchange: (e) => { gameFilter = e.target.value; refreshLists(); } },
    h("option", { value: "" }, "all games"), Object.entries(GAME_TITLES).map(([id, title]) => h("option", { value: id }, title)));
  document.body.append(root);
  root.append(messages.node,
    h("div", { class: "columns" }, createForm(),
      h("div", {},
        h("p", {}, h("label", { for: "game-filter" }, "Show "), filter, " ",
          h("button", { type: "button", class: "small", onclick: refreshLists }, "Refresh")),
        listSection("open", "Open matches"), listSection("active", "Running matches"), listSection("recent", "Finished matches"))));
  refreshLists();
  setInterval(() => { if (!document.hidden) refreshLists(); }, 5000);
}

start();
