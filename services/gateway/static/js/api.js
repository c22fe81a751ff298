// The gateway's public HTTP API and its SSE stream: with the seat socket (seat.js), the only way
// this client talks to plylog.
// Every error the gateway returns is {"error": {"code", "message"}}; it becomes an ApiError.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const READ_RETRIES = 30; // a read answered 503 with Retry-After (a long match's log being refolded) is asked again

async function request(method, path, options = {}) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await requestOnce(method, path, options);
    } catch (error) {
      if (method !== "GET" || error.status !== 503 || !error.retryAfter || attempt >= READ_RETRIES) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(error.retryAfter, 5) * 1000));
    }
  }
}

async function requestOnce(method, path, { body, token, query, signal } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, value);
  }
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(url, { method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "network", `the service cannot be reached (${error.message})`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = data && data.error;
    const failed = new ApiError(response.status, error ? error.code : "http_" + response.status,
      error ? error.message : `${method} ${url.pathname} answered ${response.status} ${response.statusText}`);
    failed.retryAfter = Number(response.headers.get("Retry-After")) || 0;
    throw failed;
  }
  return data;
}

const enc = encodeURIComponent;

export const api = {
  /** A new guest identity: {player, token}. */
  newPlayer: (name) => request("POST", "/v1/players", { body: { name } }),
  createMatch: (token, game, options, seats, clock) =>
    request("POST", "/v1/matches", { token, body: { game, options, seats, clock: clock || undefined } }),
  join: (matchId, token) => request("POST", `/v1/matches/${enc(matchId)}/join`, { token }),
  /** The seat tokens of the seats the credential's player holds: {seats, tokens}. */
  tokens: (matchId, token) => request("GET", `/v1/matches/${enc(matchId)}/tokens`, { token }),
  /** Submits an action and waits for its result record (accepted or rejected). */
  act: (matchId, token, action, expectedSeq) =>
    request("POST", `/v1/matches/${enc(matchId)}/actions`, {
      token, query: { wait: "true" },
      body: expectedSeq === undefined || expectedSeq === null ? { action } : { action, expected_seq: expectedSeq },
    }),
  match: (matchId) => request("GET", `/v1/matches/${enc(matchId)}`),
  events: (matchId, since) => request("GET", `/v1/matches/${enc(matchId)}/events`, { query: { since } }),
  position: (matchId, seq) => request("GET", `/v1/matches/${enc(matchId)}/positions/${seq}`),
  legalActions: (matchId, token) => request("GET", `/v1/matches/${enc(matchId)}/legal-actions`, { token }),
  /** The bots one can play against: {bots: {game: [{id, player, description}]}}. */
  bots: (game) => request("GET", "/v1/bots", { query: { game } }),
  matches: (status, game, limit) => request("GET", "/v1/matches", { query: { status, game, limit } }),
  leaderboard: (game, by, limit = 20) => request("GET", `/v1/leaderboards/${enc(game)}`, { query: { by, limit } }),
  player: (playerId) => request("GET", `/v1/players/${enc(playerId)}`),
  activity: (game) => request("GET", `/v1/stats/${enc(game)}/activity`),
  // the lobby's seeks and pools (docs/matchmaking.md); each waits for the matchmaker's answer
  lobby: () => request("GET", "/v1/lobby"),
  postSeek: (token, seek) => request("POST", "/v1/lobby/seeks", { token, body: seek }),
  acceptSeek: (token, seekId) => request("POST", `/v1/lobby/seeks/${enc(seekId)}/accept`, { token }),
  cancelSeek: (token, seekId) => request("DELETE", `/v1/lobby/seeks/${enc(seekId)}`, { token }),
  joinPool: (token, pool) => request("POST", "/v1/lobby/pool", { token, body: pool }),
  leavePool: (token) => request("DELETE", "/v1/lobby/pool", { token }),
  // a player's pages (docs/my-games.md)
  myGames: (token) => request("GET", "/v1/me/games", { token }),
  ratingHistory: (playerId, game) => request("GET", `/v1/players/${enc(playerId)}/ratings/${enc(game)}`),
  recent: (playerId) => request("GET", `/v1/players/${enc(playerId)}/recent`),
  /** Display names from players' profiles (docs/personal-data.md): {names: {id: name | null}}. */
  names: (playerIds) => request("GET", "/v1/names?" + playerIds.map((id) => `player=${enc(id)}`).join("&")),
};

/** A list out of a response that is either a list or an object holding one under `key`. */
export function listOf(data, key) {
  if (Array.isArray(data)) return data;
  if (data && Array.isArray(data[key])) return data[key];
  return [];
}

/**
 * Follows a match's SSE stream of result records, resuming after any lost connection.
 *
 * Uses fetch (not EventSource) so that every reconnection, including after the server closed
 * the stream or answered an error, sends `Last-Event-ID` = the last seq seen: the gateway then
 * replays what was missed. Records at or below the last seq are dropped (at-least-once).
 *   onRecord(record)   each new result record, in seq order
 *   onState(state)     "connecting" | "live" | "reconnecting"
 */
export function followMatch(matchId, { fromSeq = 0, onRecord, onState = () => {} }) {
  let lastSeq = fromSeq;
  let stopped = false;
  let controller = null;
  let delay = 500;

  async function connectOnce() {
    controller = new AbortController();
    const headers = { Accept: "text/event-stream" };
    if (lastSeq > 0) headers["Last-Event-ID"] = String(lastSeq);
    const response = await fetch(`/v1/matches/${enc(matchId)}/stream`, { headers, signal: controller.signal, cache: "no-store" });
    if (!response.ok || !response.body) throw new Error(`stream answered ${response.status}`);
    onState("live");
    delay = 500;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  function dispatch(block) {
    const data = [];
    let kind = "message";
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue; // keep-alive comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") data.push(value);
      else if (field === "event") kind = value;
    }
    if (!data.length || (kind !== "message" && kind !== "result")) return;
    let record;
    try {
      record = JSON.parse(data.join("\n"));
    } catch {
      return;
    }
    if (typeof record.seq !== "number" || record.seq <= lastSeq) return;
    if (record.status && record.status !== "accepted") return;
    lastSeq = record.seq;
    onRecord(record);
  }

  (async () => {
    onState("connecting");
    while (!stopped) {
      try {
        await connectOnce();
      } catch (error) {
        if (stopped) return;
      }
      if (stopped) return;
      onState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 5000);
    }
  })();

  return {
    get lastSeq() { return lastSeq; },
    close() {
      stopped = true;
      if (controller) controller.abort();
    },
  };
}
