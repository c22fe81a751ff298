// How the match page talks to a match: a seated player over the seat socket
// (GET /v1/matches/{id}/play, one WebSocket per seat this browser plays: actions go out, their
// results and every other result come in), falling back to the SSE stream + POST actions when
// a socket cannot open; a spectator (no seat) always over SSE.
//
//   const link = followLive(matchId, { seats, fromSeq, onRecord, onView, onState, onTransport });
//   seats()              [{seat, token}] of the seats this browser plays (asked again on refresh())
//   onRecord(record)     each new accepted result record, in seq order, once
//   onView(view)         a view to show that came without a record (a socket's hello)
//   onState(state)       "connecting" | "live" | "reconnecting"
//   onTransport(name)    "socket" | "sse"
//   link.act(seat, token, action, expectedSeq)  the result record (as POST ...?wait=true answers)
//   link.refresh()       the seats changed (a join, tokens fetched): sockets for them
//
// A socket that cannot open at first, or is refused (close code 4xxx: the gateway said why), leaves
// the page on SSE + POST. One that drops is opened again (the hello has the view; what came in
// between is read from GET .../events?since=); after SOCKET_ATTEMPTS failed opens in a row the
// page follows SSE, which reconnects by itself, and tries a socket once more when SSE is live.

import { ApiError, api, followMatch } from "./api.js";

const SUBPROTOCOL = "plylog.v1";
const HELLO_TIMEOUT_MS = 5000;
const ACT_TIMEOUT_MS = 30000; // the gateway answers "pending" after its own wait (10 s by default)
const SOCKET_ATTEMPTS = 3;

function eventId() {
  const bytes = new Uint8Array(9);
  crypto.getRandomValues(bytes);
  return "w-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** One seat's socket, open once its hello came: resolves {seat, socket, hello}; rejects with the close code. */
function openSeat(matchId, seat, token, handlers) {
  return new Promise((resolve, reject) => {
    let socket;
    try {
      const url = new URL(`/v1/matches/${encodeURIComponent(matchId)}/play`, location.href);
      url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
      socket = new WebSocket(url, [SUBPROTOCOL, "bearer." + token]);
    } catch (error) {
      reject({ code: 0, reason: String(error) });
      return;
    }
    let greeted = false;
    const timer = setTimeout(() => { if (!greeted) socket.close(); }, HELLO_TIMEOUT_MS);
    socket.onmessage = (event) => {
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (!greeted) {
        if (message.type !== "hello") return; // a refusal's error: the close follows
        greeted = true;
        clearTimeout(timer);
        resolve({ seat, socket, hello: message });
        return;
      }
      handlers.onMessage(seat, message);
    };
    socket.onclose = (event) => {
      clearTimeout(timer);
      if (!greeted) reject({ code: event.code, reason: event.reason });
      else handlers.onClose(seat, event);
    };
  });
}

export function followLive(matchId, { seats, fromSeq = 0, onRecord, onView = () => {}, onState = () => {},
  onTransport = () => {} }) {
  let lastSeq = fromSeq;
  let transport = null; // "socket" | "sse"
  let sockets = {}; // seat -> WebSocket
  let seatsKey = "";
  let sse = null;
  let failures = 0;
  let everOpen = false;
  let gaveUp = !("WebSocket" in window);
  let generation = 0; // sockets of an older attempt are ignored
  const waiting = new Map(); // event id -> {resolve, reject, timer}

  function deliver(record) {
    if (typeof record.seq !== "number" || record.seq <= lastSeq) return;
    if (record.status && record.status !== "accepted") return;
    lastSeq = record.seq;
    const { type, ...plain } = record;
    onRecord(plain);
  }

  function settle(id, outcome) {
    const entry = waiting.get(id);
    if (!entry) return;
    waiting.delete(id);
    clearTimeout(entry.timer);
    if (outcome instanceof Error) entry.reject(outcome);
    else entry.resolve(outcome);
  }

  function dropWaiting(why) {
    for (const id of [...waiting.keys()]) settle(id, new ApiError(0, "network", why));
  }

  function onMessage(seat, message) {
    if (message.type === "result" || message.type === "update") deliver(message);
    if (message.type === "result") {
      const { type, ...result } = message;
      settle(message.event_id, result);
    } else if (message.type === "error" && message.event_id) {
      settle(message.event_id, new ApiError(0, message.code, message.message));
    }
  }

  function closeSockets() {
    generation++;
    for (const socket of Object.values(sockets)) {
      socket.onclose = null;
      socket.close();
    }
    sockets = {};
  }

  function useSse() {
    closeSockets();
    dropWaiting("the seat socket closed; send the move again");
    if (sse) return;
    transport = "sse";
    onTransport("sse");
    sse = followMatch(matchId, {
      fromSeq: lastSeq, onRecord: deliver,
      onState: (s) => {
        onState(s);
        if (s === "live" && !gaveUp) openSockets(true); // back after a drop: once more a socket
      },
    });
  }

  async function catchUp(hello) {
    if (hello.seq > lastSeq) {
      try {
        const answer = await api.events(matchId, lastSeq);
        for (const record of answer.results || []) if (record.seq <= hello.seq) deliver(record);
      } catch {
        // the hello's view is shown anyway; the moves list misses what came meanwhile
      }
      lastSeq = Math.max(lastSeq, hello.seq);
    }
    if (hello.view) onView(hello.view);
  }

  /** Sockets for every seat of seats(); `probe`: from SSE, which stays if they cannot open. */
  async function openSockets(probe = false) {
    const mine = seats();
    if (!mine.length) return;
    seatsKey = mine.map((s) => s.seat).join(",");
    const attempt = ++generation;
    let held = []; // messages after a hello, held until what came before it is read (catchUp)
    const handlers = {
      onMessage: (seat, message) => {
        if (attempt !== generation) return;
        if (held) held.push([seat, message]);
        else onMessage(seat, message);
      },
      onClose: (seat, event) => { if (attempt === generation) dropped(event); },
    };
    const opened = await Promise.allSettled(mine.map((s) => openSeat(matchId, s.seat, s.token, handlers)));
    if (attempt !== generation) { // closed or replaced meanwhile
      for (const o of opened) if (o.status === "fulfilled") { o.value.socket.onclose = null; o.value.socket.close(); }
      return;
    }
    const refused = opened.find((o) => o.status === "rejected");
    if (refused) {
      for (const o of opened) if (o.status === "fulfilled") { o.value.socket.onclose = null; o.value.socket.close(); }
      failures++;
      const code = refused.reason.code;
      const refusal = code >= 4000 && code < 5000;
      if (probe || refusal || !everOpen || failures >= SOCKET_ATTEMPTS) {
        gaveUp = probe || refusal || !everOpen; // else: SSE until it is live, then a probe
        useSse();
      } else {
        onState("reconnecting");
        setTimeout(() => { if (attempt === generation && !gaveUp) openSockets(); }, 500 * 2 ** (failures - 1));
      }
      return;
    }
    failures = 0;
    everOpen = true;
    if (sse) {
      sse.close();
      sse = null;
    }
    for (const o of opened) sockets[o.value.seat] = o.value.socket;
    if (transport !== "socket") {
      transport = "socket";
      onTransport("socket");
    }
    for (const o of opened) await catchUp(o.value.hello);
    if (attempt !== generation) return;
    const release = held;
    held = null;
    for (const [seat, message] of release) onMessage(seat, message);
    onState("live");
  }

  function dropped() {
    closeSockets();
    dropWaiting("the seat socket closed; send the move again");
    onState("reconnecting");
    failures = Math.max(failures, 1);
    const attempt = generation;
    setTimeout(() => { if (attempt === generation && !gaveUp) openSockets(); }, 500);
  }

  function start() {
    onState("connecting");
    if (!gaveUp && seats().length) openSockets();
    else useSse();
  }

  start();

  return {
    get lastSeq() { return lastSeq; },
    get transport() { return transport; },
    /** The seats changed: open sockets for them (from SSE too, unless sockets failed before). */
    refresh() {
      const key = seats().map((s) => s.seat).join(",");
      if (gaveUp || !key || key === seatsKey) return;
      if (sse) {
        sse.close();
        sse = null;
      }
      closeSockets();
      openSockets();
    },
    act(seat, token, action, expectedSeq) {
      const socket = sockets[seat];
      if (transport !== "socket" || !socket || socket.readyState !== WebSocket.OPEN) {
        return api.act(matchId, token, action, expectedSeq);
      }
      const id = eventId();
      const message = { action, event_id: id };
      if (expectedSeq !== undefined && expectedSeq !== null) message.expected_seq = expectedSeq;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => settle(id, new ApiError(0, "timeout", "no answer from the seat socket")),
          ACT_TIMEOUT_MS);
        waiting.set(id, { resolve, reject, timer });
        socket.send(JSON.stringify(message));
      });
    },
    close() {
      gaveUp = true;
      closeSockets();
      if (sse) sse.close();
    },
  };
}
