"""Which record makes which notification, pure and deterministic (docs/notifications.md, "Kinds").

A notification's id is a hash of (kind, match, seq, player): the same record read twice makes the
same ids, which is what makes the outbox idempotent (docs/decisions/notifier-exactly-once.md).

- `invited`: a create that reserved a seat for a player; to that player.
- `your_move`: an accepted result after which a player is to move and was not the one who acted
  (a turn of several actions by one player notifies once, at its start; a hot-seat match never).
- `clock_low`: on a correspondence clock, for each player to move (also one in the middle of their
  own turn), a reminder due `reminder_lead_ms` before their deadline; dropped when due if the match
  has moved on (a later seq) meanwhile, whose result schedules the next one.
- `match_over`: each player of an outcome record (plylog.outcomes).
Bots (`bot:...`) are never notified.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

DAY_MS = 86_400_000
BOT_PREFIX = "bot:"


@dataclass(frozen=True)
class Notification:
    id: str
    kind: str
    player: str
    match_id: str
    seq: int
    due_ms: int = 0  # 0: at once; a reminder: when it is due
    details: dict[str, Any] = field(default_factory=dict)
    game: str | None = None
    at: str | None = None

    def payload(self) -> dict[str, Any]:
        """The JSON body a webhook gets (and an e-mail carries)."""
        return {
            "v": 1,
            "id": self.id,
            "kind": self.kind,
            "player": self.player,
            "match_id": self.match_id,
            "game": self.game,
            "seq": self.seq,
            "at": self.at,
            "details": self.details,
        }


def notification_id(kind: str, match_id: str, seq: int, player: str) -> str:
    digest = hashlib.sha256(f"{kind}\0{match_id}\0{seq}\0{player}".encode()).hexdigest()
    return f"n-{digest[:32]}"


def delivery_id(notification: str, endpoint: str) -> str:
    """One notification to one endpoint: its id in the outbox (and the receiver's idempotency key)."""
    digest = hashlib.sha256(f"{notification}\0{endpoint}".encode()).hexdigest()
    return f"d-{digest[:32]}"


def reminder_lead_ms(days_per_move: int) -> int:
    """How long before a correspondence deadline `clock_low` is due: a quarter of the days per move,
    at most one day (1 day: 6 h before; 2: 12 h; 4 and more: 24 h)."""
    return min(DAY_MS, days_per_move * DAY_MS // 4)


def _human(player: Any) -> bool:
    return isinstance(player, str) and bool(player) and not player.startswith(BOT_PREFIX)


def _new(kind: str, player: str, match_id: str, seq: int, **rest: Any) -> Notification:
    return Notification(notification_id(kind, match_id, seq, player), kind, player, match_id, seq, **rest)


def from_result(record: dict[str, Any]) -> list[Notification]:
    """The notifications of one result record (any dict: a record we cannot use makes none)."""
    view = record.get("view")
    if record.get("status") != "accepted" or record.get("duplicate") or not isinstance(view, dict):
        return []
    match_id, seq, actor = record.get("match_id"), record.get("seq"), record.get("player")
    if not isinstance(match_id, str) or not isinstance(seq, int) or isinstance(seq, bool):
        return []
    game, at = view.get("game"), record.get("at")
    common = {"game": game if isinstance(game, str) else None, "at": at if isinstance(at, str) else None}
    found: list[Notification] = []
    for event in record.get("events") or []:
        if isinstance(event, dict) and event.get("type") == "match_created":
            invited = event.get("invited") or []
            for seat, player in enumerate(invited[:2]):
                if _human(player) and player != actor:
                    found.append(_new("invited", player, match_id, seq, details={"seat": seat, "by": actor}, **common))
    seats, to_move = view.get("seats") or [], view.get("to_move") or []
    if view.get("status") != "active" or not isinstance(seats, list):
        return found
    found_clock = view.get("clock")
    clock: dict[str, Any] = found_clock if isinstance(found_clock, dict) else {}
    deadline = clock.get("deadline_ms") if clock.get("kind") == "correspondence" else None
    for player in sorted({seats[s] for s in to_move if isinstance(s, int) and 0 <= s < len(seats)} - {None}):
        if not _human(player):
            continue
        if player != actor:
            opponents = [p for p in seats if p != player]
            details = {"opponent": opponents[0] if opponents else None, "deadline_ms": deadline}
            found.append(_new("your_move", player, match_id, seq, details=details, **common))
        days = clock.get("days_per_move")
        if isinstance(deadline, int) and isinstance(days, int) and days > 0:
            due = deadline - reminder_lead_ms(days)
            found.append(
                _new("clock_low", player, match_id, seq, due_ms=due, details={"deadline_ms": deadline}, **common)
            )
    return found


def from_outcome(record: dict[str, Any]) -> list[Notification]:
    """`match_over` to each player of an outcome record."""
    match_id, seq, players = record.get("match_id"), record.get("seq"), record.get("players")
    found_outcome = record.get("outcome")
    outcome: dict[str, Any] = found_outcome if isinstance(found_outcome, dict) else {}
    if not isinstance(match_id, str) or not isinstance(seq, int) or not isinstance(players, list):
        return []
    winner = outcome.get("winner")
    found = []
    for seat, player in enumerate(players[:2]):
        if not _human(player) or player in players[:seat]:
            continue
        result = "draw" if winner is None else "won" if winner == seat else "lost"
        if outcome.get("reason") == "aborted":
            result = "aborted"
        details = {"result": result, "reason": outcome.get("reason"), "winner": winner, "rated": record.get("rated")}
        game, at = record.get("game"), record.get("ended_at")
        found.append(
            _new(
                "match_over",
                player,
                match_id,
                seq,
                details=details,
                game=game if isinstance(game, str) else None,
                at=at if isinstance(at, str) else None,
            )
        )
    return found


def backoff_s(attempt: int, delivery: str, base_s: float, cap_s: float) -> float:
    """Seconds before retry number `attempt` (1 = the first retry): doubling from `base_s`, at most
    `cap_s`, times a jitter in [0.5, 1) drawn from the delivery id (so replayable, and endpoints that
    failed together do not retry in step)."""
    jitter = 0.5 + int(hashlib.sha256(f"{delivery}\0{attempt}".encode()).hexdigest()[:8], 16) / 2**33
    return min(cap_s, base_s * 2 ** max(0, attempt - 1)) * jitter
