// Tournaments in the lobby: the latest tournaments, a link to each one's page, and a button to
// enter those still open (docs/tournaments.md).

import { ApiError } from "./api.js";
import { GAME_TITLES, clear, formatTime, h, identity } from "./ui.js";

const enc = encodeURIComponent;

async function call(method, path, token) {
  const response = await fetch(path, {
    method, headers: token ? { Authorization: `Bearer ${token}`, Accept: "application/json" } : { Accept: "application/json" },
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = data && data.error;
    throw new ApiError(response.status, error ? error.code : `http_${response.status}`, error ? error.message : response.statusText);
  }
  return data;
}

export const tournamentApi = {
  list: (limit = 30) => call("GET", `/v1/tournaments?limit=${limit}`),
  get: (id) => call("GET", `/v1/tournaments/${enc(id)}`),
  register: (id, token) => call("POST", `/v1/tournaments/${enc(id)}/register`, token),
  withdraw: (id, token) => call("POST", `/v1/tournaments/${enc(id)}/withdraw`, token),
};

export async function enter(id, messages) {
  try {
    const me = await identity();
    await tournamentApi.register(id, me.token);
    messages.show(`You are entered in ${id}.`, "info");
    return true;
  } catch (error) {
    messages.show(`Could not enter ${id}: ${error.message}`);
    return false;
  }
}

function row(t, messages, refresh) {
  const page = h("a", { href: `/tournament.html?id=${enc(t.tournament_id)}` }, t.name);
  const action = t.status === "over" ? "" : h("button", {
    type: "button", class: "small primary", "data-enter": t.tournament_id,
    onclick: async () => { if (await enter(t.tournament_id, messages)) refresh(); },
  }, "Register");
  return h("tr", { dataset: { tournament: t.tournament_id } },
    h("td", {}, page),
    h("td", {}, `${t.format.replace("_", " ")} · ${GAME_TITLES[t.game] || t.game}`),
    h("td", {}, t.status === "open" ? `starts ${formatTime(t.starts_at)}` : t.status === "running" ? `round ${t.round}` : `won by ${t.winner || "nobody"}`),
    h("td", {}, `${t.players}/${t.max_players}`),
    h("td", {}, action));
}

/** The lobby's tournament card; refreshes itself every few seconds. */
export function tournamentsSection(messages) {
  const body = h("tbody", { id: "list-tournaments" });
  const refresh = async () => {
    try {
      const rows = (await tournamentApi.list()).tournaments;
      clear(body, rows.length ? rows.map((t) => row(t, messages, refresh))
        : h("tr", {}, h("td", { colspan: 5, class: "hint" }, "none yet (`plylog tournament create`)")));
    } catch (error) {
      clear(body, h("tr", {}, h("td", { colspan: 5, class: "msg error" }, error.message)));
    }
  };
  refresh();
  setInterval(() => { if (!document.hidden) refresh(); }, 5000);
  return h("section", { class: "card", id: "tournaments" }, h("h2", {}, "Tournaments"),
    h("table", { class: "matches" },
      h("thead", {}, h("tr", {}, ["Tournament", "Format", "", "Players", ""].map((t) => h("th", { scope: "col" }, t)))),
      body));
}
