// DOM helpers, the page header, the player's identity and seat tokens (localStorage).

import { api } from "./api.js";

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element: h("button", {class: "x", onclick: f}, "text", ...children). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, like h(). */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function clear(node, ...children) {
  node.replaceChildren();
  return build(node, {}, children);
}

// --- identity and seats ----------------------------------------------------------------------
// The player is a guest identity the gateway makes (POST /v1/players): the name typed in the
// header plus a random suffix (ann~k3f9xq), and a token that proves it. Others invite a player
// by that id; nobody else can act as it.
const NAME_KEY = "plylog.player";
const IDENTITY_KEY = "plylog.identity";
const SEATS_KEY = "plylog.seats";

const shownNames = {}; // player id -> the name its profile gives (null: none, show the id); never stored
const asking = {}; // player id -> the request that asks for its name (settled: the answer is in shownNames)

/** Asks the gateway once for the display names of `ids`; once they are known (at once when they
 * were already), resolves, and calls `then` if it had to wait. */
export async function learnNames(ids, then) {
  const players = [...new Set(ids.filter((id) => id && !id.startsWith("bot:")))];
  const wanted = players.filter((id) => !(id in asking));
  if (wanted.length) {
    const request = api.names(wanted)
      .then((answer) => { Object.assign(shownNames, answer.names || {}); })
      .catch(() => {}); // no names: the ids are shown, as views have them
    for (const id of wanted) asking[id] = request;
  }
  const pending = players.filter((id) => !(id in shownNames));
  if (!pending.length) return;
  await Promise.all(new Set(pending.map((id) => asking[id])));
  for (const id of pending) if (!(id in shownNames)) shownNames[id] = null;
  then();
}

/** A player as pages show them: "name (id)" when their profile names them, else the id. */
export function shownAs(id) {
  return shownNames[id] ? `${shownNames[id]} (${id})` : id;
}

export function playerName() {
  let name = localStorage.getItem(NAME_KEY);
  if (!name) {
    name = "guest" + Math.random().toString(36).slice(2, 6);
    localStorage.setItem(NAME_KEY, name);
  }
  return name;
}

function setPlayerName(name) {
  const clean = name.trim().replace(/[^A-Za-z0-9_.-]/g, "").slice(0, 40);
  if (clean && clean !== localStorage.getItem(NAME_KEY)) {
    localStorage.setItem(NAME_KEY, clean);
    localStorage.removeItem(IDENTITY_KEY); // a new name is a new identity
  }
  return playerName();
}

/** The stored identity {player, token} for the current name, or null (none made yet). */
export function storedIdentity() {
  try {
    const stored = JSON.parse(localStorage.getItem(IDENTITY_KEY));
    return stored && stored.name === playerName() ? stored : null;
  } catch {
    return null;
  }
}

/** The identity for the current name, made by the gateway on first use. */
export async function identity() {
  const stored = storedIdentity();
  if (stored) return stored;
  const answer = await api.newPlayer(playerName());
  const made = { name: playerName(), player: answer.player, token: answer.token };
  localStorage.setItem(IDENTITY_KEY, JSON.stringify(made));
  showIdentity();
  return made;
}

function showIdentity() {
  const shown = document.getElementById("player-id");
  const stored = storedIdentity();
  if (shown) shown.textContent = stored ? stored.player : "(made when you first play)";
}

function allSeats() {
  try {
    return JSON.parse(localStorage.getItem(SEATS_KEY)) || {};
  } catch {
    return {};
  }
}

/** The seat tokens this browser holds for a match: {seat: {token, mine}}. `mine: false` marks
 * a token kept only to share it (the creator's copy of an invited player's seat link). */
export function seatsOf(matchId) {
  return allSeats()[matchId] || {};
}

export function rememberSeat(matchId, seat, token, mine = true) {
  const seats = allSeats();
  const forMatch = seats[matchId] || {};
  const known = forMatch[seat];
  forMatch[seat] = { token, mine: mine || Boolean(known && known.mine) };
  seats[matchId] = forMatch;
  localStorage.setItem(SEATS_KEY, JSON.stringify(seats));
}

/** The seat a token is for (tokens read `<match_id>.<seat>.<signature>`). */
export function seatOfToken(token) {
  const parts = String(token).split(".");
  return parts.length === 3 ? Number(parts[1]) : null;
}

export function seatLink(matchId, token) {
  return `${location.origin}/match.html?id=${encodeURIComponent(matchId)}#token=${encodeURIComponent(token)}`;
}

// --- page frame -----------------------------------------------------------------------------
export const GAME_TITLES = { strands: "Strands", mastermind: "Mastermind", mana: "Mana", mind_ninja: "Mind Ninja" };

export function header(active) {
  const link = (href, label, name) =>
    h("a", { href, "aria-current": active === name ? "page" : undefined }, label);
  const nameInput = h("input", {
    id: "player-name", value: playerName(), maxlength: 40, autocomplete: "nickname", size: 14,
    "aria-label": "your player name",
    onchange: (e) => { e.target.value = setPlayerName(e.target.value); showIdentity(); },
  });
  const stored = storedIdentity();
  if (!stored) identity().catch(() => {}); // shown as soon as the gateway made it; retried on first use
  return h("header", { class: "site" },
    h("a", { class: "brand", href: "/" }, "plylog"),
    h("nav", { "aria-label": "main" }, link("/", "Lobby", "lobby"), link("/games.html", "My games", "games"),
      link("/leaderboards.html", "Leaderboards", "leaderboards")),
    h("label", { class: "who" }, "Playing as ", nameInput),
    h("span", { class: "who hint", title: "others invite you with this id" }, " id ",
      h("code", { id: "player-id" }, stored ? stored.player : "(made when you first play)")));
}

/** A message area: show(text, kind) with kind "error" (role=alert) or "info". */
export function messageArea() {
  const box = h("div", { class: "messages", role: "alert", "aria-live": "assertive" });
  return {
    node: box,
    show(text, kind = "error") {
      clear(box, h("p", { class: `msg ${kind}` },
        h("span", { class: "msg-icon", "aria-hidden": "true" }, kind === "error" ? "✖" : "ℹ"), " ", text, " ",
        h("button", { class: "link", type: "button", "aria-label": "dismiss message", onclick: () => clear(box) }, "dismiss")));
    },
    clear() { clear(box); },
  };
}

export function formatClock(ms) {
  const clamped = Math.max(0, ms);
  const total = Math.floor(clamped / 1000);
  const minutes = Math.floor(total / 60);
  const seconds = String(total % 60).padStart(2, "0");
  return clamped < 10000 ? `${minutes}:${seconds}.${Math.floor((clamped % 1000) / 100)}` : `${minutes}:${seconds}`;
}

/** A correspondence clock's time: "2 days 3 h", "5 h 12 min". */
export function formatDays(ms) {
  const minutes = Math.floor(Math.max(0, ms) / 60000);
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  return days ? `${days} day${days === 1 ? "" : "s"} ${hours} h` : `${hours} h ${minutes % 60} min`;
}

export function formatTime(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return isNaN(date) ? iso : date.toLocaleString();
}

/** Arrow keys move the focus between the focusable items of a board, by their position on
 * screen (works for hex and square boards alike); Enter and Space activate (click) them. */
export function boardKeys(root) {
  root.addEventListener("keydown", (event) => {
    const item = event.target.closest && event.target.closest("[data-key]");
    if (!item || !root.contains(item)) return;
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      item.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      return;
    }
    const direction = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[event.key];
    if (!direction) return;
    event.preventDefault();
    const from = item.getBoundingClientRect();
    const fx = from.x + from.width / 2, fy = from.y + from.height / 2;
    let best = null, bestScore = Infinity;
    for (const other of root.querySelectorAll("[data-key][tabindex]")) {
      if (other === item) continue;
      const box = other.getBoundingClientRect();
      const dx = box.x + box.width / 2 - fx, dy = box.y + box.height / 2 - fy;
      const along = dx * direction[0] + dy * direction[1];
      if (along <= 1) continue;
      const across = Math.abs(dx * direction[1]) + Math.abs(dy * direction[0]);
      const score = along + 2 * across;
      if (score < bestScore) { best = other; bestScore = score; }
    }
    if (best) best.focus();
  });
}

/** A focusable, clickable SVG group for a board cell. */
export function cellGroup(key, label, onActivate, extra = {}) {
  return s("g", {
    "data-key": key, tabindex: onActivate ? 0 : -1, role: onActivate ? "button" : "img", "aria-label": label,
    class: "cell" + (extra.class ? " " + extra.class : ""), onclick: onActivate || undefined,
  });
}

export function copyButton(text, label = "Copy") {
  return h("button", {
    type: "button", class: "small",
    onclick: async (event) => {
      const button = event.currentTarget;
      try {
        await navigator.clipboard.writeText(text);
        button.textContent = "Copied";
      } catch {
        button.textContent = "Select and copy the link";
      }
    },
  }, label);
}

export function query(name) {
  return new URLSearchParams(location.search).get(name);
}
