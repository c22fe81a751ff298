"""A match's positions refolded from its log (history.py): time travel and the legal actions of a
seat, each request's work bounded (PLYLOG_WORK_BUDGET_MS, PLYLOG_LEGAL_ACTIONS_CAP). One of the
gateway's resources (resources.py): routes get it as `PositionsDep`."""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from games.match import MatchState
from services.common.projection import Projection

from .errors import ApiError
from .history import Folded, FoldPending, HistoryUnavailable, MatchHistory
from .matches import known_match


class Positions:
    def __init__(self, history: MatchHistory, projection: Projection, legal_actions_cap: int, budget_s: float):
        self._history = history
        self._projection = projection
        self._cap = legal_actions_cap
        self._budget_s = budget_s

    def folded_through(self, match_id: str) -> bool:
        """Whether the match is folded through its log's end as last read (a call is cheap then)."""
        return self._history.folded_through(match_id)

    async def folded(self, match_id: str) -> Folded:
        """The match refolded (404 unknown, 503 while its log is being read or cannot be)."""
        meta = await known_match(self._projection, match_id, "created_at")
        try:
            return await self._history.fold(match_id, meta.get("created_at") or "1970-01-01T00:00:00Z")
        except FoldPending as pending:
            raise ApiError(
                503,
                "unavailable",
                f"reading the match's log: {pending.folded_records} of its records folded so far, the most one "
                "request may (PLYLOG_WORK_BUDGET_MS); retry to go on",
                headers={"Retry-After": "1"},
            ) from None
        except HistoryUnavailable as error:
            raise ApiError(503, "unavailable", f"the match log cannot be read now: {error}") from None

    async def legal_actions(self, match_id: str, seat: int) -> dict[str, Any]:
        """The legal actions of `seat` now, refolded from the match's log (the body of GET legal-actions):
        at most PLYLOG_LEGAL_ACTIONS_CAP of them, and as many as PLYLOG_WORK_BUDGET_MS of CPU lists
        (`truncated` when either cut the listing)."""
        state = (await self.folded(match_id)).current
        actions: list[dict[str, Any]] = []
        truncated, commit_listed = False, False
        if state is not None and seat in state.to_move():
            listed, truncated = await asyncio.to_thread(_listing, state, seat, self._cap, self._budget_s)
            commit_listed = any(a.get("type") == "commit" for a in listed)
            actions = without_guessable_secrets(listed)
        body: dict[str, Any] = {
            "match_id": match_id,
            "seat": seat,
            "seq": state.seq if state else 0,
            "status": state.status if state else None,
            "to_move": list(state.to_move()) if state else [],
            "actions": actions,
            "truncated": truncated,
        }
        if commit_listed:
            body["hint"] = (
                "commit: send the MM1 commitment of a code and salt of your own "
                '(sha256 hex of "MM1|<match>|<round>|<attempt>|<c,o,d,e>|<salt>"; docs/rules/mastermind.md)'
            )
        return body


def _listing(state: MatchState, seat: int, cap: int, budget_s: float) -> tuple[list[dict[str, Any]], bool]:
    """(up to `cap` legal actions, whether there are more), listed until this thread has used
    `budget_s` of CPU: the games enumerate lazily, at a bounded cost per action."""
    started = time.thread_time()
    listed: list[dict[str, Any]] = []
    for action in state.rules.legal_actions(state.board, seat):  # the match's own rules version
        if len(listed) == cap or (len(listed) % 32 == 31 and time.thread_time() - started > budget_s):
            return listed, True
        listed.append(action)
    return listed, False


def without_guessable_secrets(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules list Mastermind's set_code with a salt, and commit with a commitment, derived from
    public data (fine for bots, fatal for a person: the code could be recovered from the public
    commitment). set_code gets a fresh unguessable salt; commit is left out (the client makes its own)."""
    salt = secrets.token_hex(16)
    return [{**a, "salt": salt} if a.get("type") == "set_code" else a for a in actions if a.get("type") != "commit"]
