// The four games the client draws; each module exports title, seatNames, optionsForm(),
// render(view, ctx) -> {board, panel}, describeEvent(event) and scoreText(view); a game whose
// page needs no legal-actions list exports needsLegalActions = false.

import * as mana from "./mana.js";
import * as mastermind from "./mastermind.js";
import * as mind_ninja from "./mind_ninja.js";
import * as strands from "./strands.js";

export const GAMES = { strands, mastermind, mana, mind_ninja };

const LIFECYCLE = {
  match_created: (game, e) => `match created (${e.game})`,
  seat_joined: (game, e) => `${e.player} takes ${seatName(game, e.seat)}`,
  match_started: () => "match started",
  match_ended: (game, e) => `match over: ${e.winner === null ? "no winner" : `${seatName(game, e.winner)} wins`} (${e.reason.replaceAll("_", " ")})`,
  vacation_started: (game, e) => `${seatName(game, e.seat)} is on vacation for ${e.days} day(s), until ${new Date(e.until).toLocaleString()}`,
  vacation_ended: (game, e) => `${seatName(game, e.seat)} is back from vacation (${e.days_back} day(s) kept)`,
};

/** One line of text for an event of any game. */
export function describeEvent(game, event) {
  const lifecycle = LIFECYCLE[event.type];
  if (lifecycle) return lifecycle(game, event);
  const module = GAMES[game];
  return (module && module.describeEvent(event)) || event.type.replaceAll("_", " ");
}

/** The name of a seat in a game ("Black", "seat 1", ...). */
export function seatName(game, seat) {
  const module = GAMES[game];
  return module ? module.seatNames[seat] : `Seat ${seat}`;
}

export function outcomeText(view) {
  const o = view.outcome;
  if (!o) return "";
  const reason = o.reason.replaceAll("_", " ");
  if (o.winner === null || o.winner === undefined) return o.reason === "aborted" ? "aborted" : `draw (${reason})`;
  const player = view.seats[o.winner];
  return `${seatName(view.game, o.winner)}${player ? ` (${player})` : ""} wins — ${reason}`;
}
