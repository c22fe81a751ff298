"""The Mastermind codemaker every Mastermind bot uses: a uniformly random secret, an honest
commitment, true feedback, the right reveal.

Recoverable secrets. The bot service is stateless across restarts, so the codemaker never
stores its secret: the code and salt of a try are a deterministic function of
(secret key, match id, round, attempt):

    rng  = random.Random(HMAC-SHA256(secret_key, "plylog-mastermind-codemaker|<match>|<round>|<attempt>"))
    code = a uniformly random valid code drawn with rng;  salt = 32 hex digits from rng.getrandbits(128)

and on its next turn (feedback, reveal) the bot derives them again from the same inputs.
The secret key is per installation and must stay secret: with it, anyone can derive every
bot secret. The bot service passes its own (`make_bot(..., secret_key=...)`); without one,
`OFFLINE_KEY` is used, which is public: fine for offline evaluation, tests and self-play,
never for playing people. A key changed in the middle of a try makes the reveal fail the
commitment (an indication error), nothing worse.
"""

from __future__ import annotations

import hashlib
import hmac
import random

from games.core import ActionDict
from games.mastermind import MastermindState, all_codes, as_list, commitment_of, feedback, random_code

from .mastermind_space import enumerable

OFFLINE_KEY = b"plylog-offline-bots: public, for tests and self-play only"


def try_rng(secret_key: bytes, match_id: str, round_: int, attempt: int) -> random.Random:
    message = f"plylog-mastermind-codemaker|{match_id}|{round_}|{attempt}".encode()
    return random.Random(hmac.new(secret_key, message, hashlib.sha256).digest())


class Codemaker:
    def __init__(self, secret_key: bytes | None = None):
        self.key = secret_key or OFFLINE_KEY

    def secret(self, board: MastermindState) -> tuple[str, str]:
        """(code, salt) of the running try, the same on every call."""
        rng = try_rng(self.key, board.match_id, board.round, board.attempt)
        key = board.settings.key
        if enumerable(key):  # draw from the list: exactly uniform
            code = rng.choice(all_codes(key))
        else:  # the game's sampler: uniform without max_distinct, close to it with one
            code = random_code(key, rng)
        return code, f"{rng.getrandbits(128):032x}"

    def commitment(self, board: MastermindState) -> str:
        code, salt = self.secret(board)
        return commitment_of(board.match_id, board.round, board.attempt, code, salt)

    def choose(self, board: MastermindState) -> ActionDict:
        """The codemaker's action in the phase `board` is in (code, feedback or reveal)."""
        code, salt = self.secret(board)
        if board.phase == "code":
            if board.settings.feedback == "auto":
                return {"type": "set_code", "code": as_list(code), "salt": salt}
            return {"type": "commit", "commitment": self.commitment(board)}
        if board.phase == "feedback":
            black, white = feedback(code, board.pending)
            return {"type": "feedback", "black": black, "white": white}
        if board.phase == "reveal":
            return {"type": "reveal", "code": as_list(code), "salt": salt}
        raise ValueError(f"the codemaker has nothing to do in phase {board.phase!r}")
