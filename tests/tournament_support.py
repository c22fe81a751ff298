"""A tournament driven through its fold, record by record, for given/when/then and property tests."""

from __future__ import annotations

import random
from typing import Any

import orjson

from games.timeutil import from_ms
from games.tournaments import read, standings, step, to_create, wake_at
from games.tournaments.state import Pairing, TournamentState
from schemas.tournament import DIRECTOR, TournamentResultRecord
from tests.schema_check import check

T0 = 1_700_000_000_000  # epoch ms of every test tournament's creation
START = T0 + 60_000
CLOCK = {"initial_s": 300, "increment_s": 2}  # every tournament needs one
SCHEMA_CHECKS = 60  # results per tournament also checked by jsonschema (milliseconds each)


class Tourney:
    """One tournament: `ok` and `rejected` submit a record and check its result; every record's
    bytes are kept (`lines`) so the whole tournament can be replayed."""

    def __init__(self, tournament_id: str = "cup") -> None:
        self.tournament_id = tournament_id
        self.state: TournamentState | None = None
        self.lines: list[bytes] = []
        self.results: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.now = T0
        self._ids = 0

    # --- records --------------------------------------------------------------------------------
    def submit(self, actor: str, action: dict[str, Any], at: int | None = None, event_id: str | None = None) -> dict:
        if at is not None:
            self.now = at
        self._ids += 1
        record = {
            "v": 1,
            "event_id": event_id or f"e{self._ids}",
            "tournament_id": self.tournament_id,
            "actor": actor,
            "at": from_ms(self.now),
            "action": action,
        }
        raw = orjson.dumps(record)
        self.lines.append(raw)
        taken = step(self.state, read(raw))
        self.state = taken.state
        TournamentResultRecord.model_validate(taken.result)  # every result fits the contract,
        if len(self.results) < SCHEMA_CHECKS:  # and its exported JSON Schema (slower: the first ones)
            check("tournament_result", taken.result)
        self.results.append(taken.result)
        self.events.extend(taken.result["events"])
        return taken.result

    def ok(self, actor: str, action: dict[str, Any], at: int | None = None) -> list[dict[str, Any]]:
        result = self.submit(actor, action, at)
        assert result["status"] == "accepted", result.get("reason")
        return result["events"]

    def rejected(self, actor: str, action: dict[str, Any], code: str, at: int | None = None) -> str:
        result = self.submit(actor, action, at)
        assert result["status"] == "rejected", f"accepted: {result['events']}"
        assert result["reason"]["code"] == code, result["reason"]
        return result["reason"]["message"]

    # --- shortcuts --------------------------------------------------------------------------------
    def create(self, format_: str, game: str = "strands", creator: str = "director", **settings: Any) -> list:
        action = {"type": "create", "name": "Test cup", "format": format_, "game": game, "starts_at": from_ms(START)}
        if format_ == "swiss":
            settings.setdefault("rounds", 3)
        if format_ == "arena":
            settings.setdefault("duration_s", 600)
        settings.setdefault("clock", CLOCK)
        return self.ok(creator, {**action, **settings}, at=T0)

    def register(self, *players: str, ratings: dict[str, int] | None = None, bot: bool = False) -> None:
        for player in players:
            action = {"type": "register", "rating": (ratings or {}).get(player, 1500), "bot": bot}
            if bot:
                self.ok(DIRECTOR, {**action, "player": player})
            else:
                self.ok(player, action)

    def tick(self, at: int | None = None) -> list[dict[str, Any]]:
        return self.ok(DIRECTOR, {"type": "tick"}, at=at)

    def start(self) -> list[dict[str, Any]]:
        return self.tick(max(self.now, START))

    def join(self, pairing: Pairing, *players: str) -> None:
        for player in players or pairing.seats:
            self.ok(DIRECTOR, {"type": "match_joined", "match_id": pairing.match_id, "player": player})

    def finish(self, pairing: Pairing, winner: str | None, reason: str | None = None) -> list[dict[str, Any]]:
        """The pairing's match ends: `winner` by player id, None for a draw."""
        seat = None if winner is None else pairing.seats.index(winner)
        outcome = {"winner": seat, "reason": reason or ("draw" if seat is None else "largest_group")}
        action = {"type": "match_ended", "match_id": pairing.match_id, "players": list(pairing.seats)}
        return self.ok(DIRECTOR, {**action, "outcome": outcome})

    def play(self, pairing: Pairing, winner: str | None) -> list[dict[str, Any]]:
        self.join(pairing)
        return self.finish(pairing, winner)

    def pending(self) -> list[Pairing]:
        return to_create(self.state)

    def board(self, *players: str) -> Pairing:
        """The pending pairing of these players (in either seat)."""
        for pairing in self.pending():
            if set(pairing.seats) == set(players):
                return pairing
        raise AssertionError(f"no pending pairing of {players}: {[p.seats for p in self.pending()]}")

    def standings(self) -> list[dict[str, Any]]:
        return standings(self.state)

    def row(self, player: str) -> dict[str, Any]:
        return next(r for r in self.standings() if r["player"] == player)

    def wake(self) -> list[dict[str, Any]]:
        """A tick at the time the state says something is due."""
        return self.tick(wake_at(self.state))


def run_random(tourney: Tourney, rng: random.Random, leave_rate: float = 0.0, limit: int = 4000) -> None:
    """Play a started tournament to its end. Each step one of: a pending match gets a random result;
    its players do not all turn up (the forfeit wait passes); a player withdraws; a player who left
    comes back; a new player enters (refused where the format has no late entry); time passes."""
    entered = len(tourney.state.entrants)
    for _ in range(limit):
        state = tourney.state
        if state.status == "over":
            return
        tourney.now += 1000
        pending = tourney.pending()
        roll = rng.random()
        due = wake_at(state)
        if due is not None and due <= tourney.now:  # the service ticks when something falls due
            tourney.tick()
        elif roll < leave_rate / 2 and state.active():
            tourney.ok(rng.choice(state.active()).player, {"type": "withdraw"})
        elif roll < leave_rate and any(e.status != "active" for e in state.entrants):
            tourney.submit(rng.choice([e for e in state.entrants if e.status != "active"]).player, {"type": "register"})
        elif roll < leave_rate * 1.25:
            entered += 1
            tourney.submit(f"late{entered}", {"type": "register", "rating": rng.randint(1000, 2000)})
        elif not pending:
            tourney.tick(max(tourney.now, due) if due is not None else tourney.now)
        elif roll < leave_rate * 2:
            pairing = rng.choice(pending)
            for player in pairing.seats:
                if rng.random() < 0.5:
                    tourney.submit(DIRECTOR, {"type": "match_joined", "match_id": pairing.match_id, "player": player})
            deadline = pairing.paired_ms + tourney.state.settings.forfeit_wait_s * 1000
            tourney.submit(DIRECTOR, {"type": "tick"}, at=max(tourney.now, deadline))  # refused after an arena's end
        else:  # joins and a result; the last records may come after an arena's end (then refused)
            pairing = rng.choice(pending)
            for player in pairing.seats:
                tourney.submit(DIRECTOR, {"type": "match_joined", "match_id": pairing.match_id, "player": player})
            seat = rng.choice([0, 1, None])
            outcome = {"winner": seat, "reason": "draw" if seat is None else "largest_group"}
            action = {"type": "match_ended", "match_id": pairing.match_id, "players": list(pairing.seats)}
            tourney.submit(DIRECTOR, {**action, "outcome": outcome})
    raise AssertionError("the tournament did not end")
