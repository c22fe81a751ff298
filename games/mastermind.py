"""Mastermind as a two-player scored match, as docs/rules/mastermind.md describes it.

Codes are held internally as strings of digits ("0123": colours are 0..9, one character
each), which makes feedback, hashing and comparison cheap; on the wire they are lists of ints.

Secrets: in `auto` mode the code and salt travel only in the private `_code`/`_salt` fields
of `secret_committed` (the fold strips them from results) and in the state; the public view
shows the commitment of the running try and, once a try is over, its code and salt. In
`manual` mode the service never sees the code before the reveal.

Phases of a try: `code` (codemaker sets/commits) -> `guess` (codebreaker) -> [manual:
`feedback` (codemaker)] -> ... -> [manual: `reveal` (codemaker)] -> scored or indication
error -> `round_started` of the next try, or `over`.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from functools import cache, lru_cache
from itertools import permutations, product
from math import comb, factorial
from typing import Any, Literal

from schemas.mastermind import MASTERMIND_ACTIONS, MastermindOptions

from .core import Event, Frozen, Game, illegal

DIGITS = "0123456789"
PEG_LETTERS = "RYGBKW6789"  # the classic six by their initials, then digits
INDICATION_PENALTY = 3
#: Tries of one round: the indication error of the last one loses the match for the codemaker
#: (reason `indication_errors`). Without a bound a codemaker could replay a round for ever and
#: grow the match's state and log without limit.
MAX_ATTEMPTS = 5
HEX = frozenset("0123456789abcdefABCDEF")
CONSISTENT_SPACE = 5_000  # the bot filters consistent guesses exactly up to this size
BOT_NONCES = 512  # manual-mode bots hide their code among this many derivable secrets


# --- codes, feedback, commitments ---------------------------------------------------------------
_SIGNATURES: dict[str, tuple[frozenset[int], frozenset[int]]] = {}


def signature(code: str) -> tuple[frozenset[int], frozenset[int]]:
    """Two small sets per code (memoised: feedback is called a lot by bots): its (position,
    colour) pairs and its (colour, occurrence) pairs, so that black = |positions ∩| and
    Σ min(count in secret, count in guess) = |occurrences ∩| (the k-th peg of colour c is
    shared exactly when both codes hold at least k of c)."""
    found = _SIGNATURES.get(code)
    if found is None:
        if len(_SIGNATURES) > 200_000:
            _SIGNATURES.clear()
        seen = [0] * 10
        occurrences = []
        for ch in code:
            colour = ord(ch) - 48
            occurrences.append(colour * 16 + seen[colour])
            seen[colour] += 1
        found = _SIGNATURES[code] = (
            frozenset(i * 16 + ord(ch) - 48 for i, ch in enumerate(code)),
            frozenset(occurrences),
        )
    return found


def feedback(secret: str, guess: str) -> tuple[int, int]:
    """(black, white): black = same colour in the same position; white = Σ over colours of
    min(count in secret, count in guess) minus black. Symmetric in its arguments."""
    positions_s, occurrences_s = _SIGNATURES.get(secret) or signature(secret)
    positions_g, occurrences_g = _SIGNATURES.get(guess) or signature(guess)
    black = len(positions_s & positions_g)
    return black, len(occurrences_s & occurrences_g) - black


def commitment_of(match_id: str, round_: int, attempt: int, code: str, salt: str) -> str:
    """sha256_hex("MM1|" + match_id + "|" + round + "|" + attempt + "|" + ",".join(code digits) + "|" + salt)."""
    text = f"MM1|{match_id}|{round_}|{attempt}|{','.join(code)}|{salt}"
    return hashlib.sha256(text.encode()).hexdigest()


def as_list(code: str) -> list[int]:
    return [ord(c) - 48 for c in code]


def as_code(pegs: list[int]) -> str:
    """The string form of an already range-checked code."""
    return "".join(DIGITS[p] for p in pegs)


def letters(code: str) -> str:
    return " ".join(PEG_LETTERS[ord(c) - 48] for c in code)


# --- state ----------------------------------------------------------------------------------------
class Settings(Frozen):
    pegs: int
    colors: int
    repeats: bool
    max_distinct: int | None
    max_rows: int
    rounds: int
    feedback: Literal["auto", "manual"]
    unsolved_penalty: int

    @property
    def key(self) -> tuple[int, int, bool, int | None]:
        """What decides which codes are valid (hashable, for the caches)."""
        return (self.pegs, self.colors, self.repeats, self.max_distinct)


class FinishedTry(Frozen):
    round: int
    attempt: int
    codemaker: int
    commitment: str
    code: str
    salt: str
    points: int | None = None  # the codebreaker's points when the try was scored
    error: str | None = None  # indication error reason when it was not
    wrong_rows: tuple[int, ...] = ()


Phase = Literal["code", "guess", "feedback", "reveal", "scoring", "over"]


class MastermindState(Frozen):
    match_id: str
    settings: Settings
    round: int = 1
    attempt: int = 1
    phase: Phase = "code"
    commitment: str | None = None
    secret: str | None = None  # auto mode only: never in a public view or event
    salt: str | None = None  # auto mode only, idem
    rows: tuple[tuple[str, int, int], ...] = ()  # (guess, black, white) of the running try
    pending: str | None = None  # manual mode: the guess awaiting feedback
    totals: tuple[int, int] = (0, 0)  # points incl. penalties
    penalties: tuple[int, int] = (0, 0)
    scored: int = 0  # rounds scored so far
    tries: tuple[FinishedTry, ...] = ()
    forfeited_by: int | None = None  # the codemaker whose last try of a round was an indication error

    @property
    def codemaker(self) -> int:
        return 0 if self.round % 2 == 1 else 1

    @property
    def codebreaker(self) -> int:
        return 1 - self.codemaker


# --- the space of valid codes -----------------------------------------------------------------------
def code_problem(settings: Settings, pegs: list[int], what: str, secret: bool = False) -> str | None:
    """Why `pegs` is not a valid code under the options (None if it is). Rejections are public:
    for a `secret` code (set_code, reveal) the message names the rule broken, never a peg of it."""
    length, colors = settings.pegs, settings.colors
    if len(pegs) != length:
        return f"{what} must have {length} pegs, not {len(pegs)}"
    for position, colour in enumerate(pegs, start=1):
        if not 0 <= colour < colors:
            if secret:
                return f"{what} has a peg outside the colours 0 to {colors - 1}"
            return f"{what}: peg {position} is colour {colour}, but colours are 0 to {colors - 1}"
    distinct = set(pegs)
    if not settings.repeats and len(distinct) < length:
        if secret:
            return f"{what} repeats a colour, but repeats are off (repeats: false)"
        repeated = next(c for c in pegs if pegs.count(c) > 1)
        return f"{what}: colour {repeated} appears {pegs.count(repeated)} times, but repeats are off (repeats: false)"
    if settings.max_distinct is not None and len(distinct) > settings.max_distinct:
        if secret:
            return f"{what} uses more than the {settings.max_distinct} distinct colours allowed (max_distinct)"
        return (
            f"{what} uses {len(distinct)} distinct colours, "
            f"but at most {settings.max_distinct} are allowed (max_distinct)"
        )
    return None


def iter_codes(key: tuple[int, int, bool, int | None]) -> Iterator[str]:
    """Every valid code in lexicographic order, lazily (there may be 10^8)."""
    pegs, colors, repeats, max_distinct = key
    palette = DIGITS[:colors]
    if not repeats:
        for chosen in permutations(palette, pegs):
            yield "".join(chosen)
        return
    limit = max_distinct if max_distinct is not None and max_distinct < min(pegs, colors) else None
    if limit is None:
        for chosen in product(palette, repeat=pegs):
            yield "".join(chosen)
        return
    yield from _codes_with_few_colours("", frozenset(), pegs, palette, limit)


def _codes_with_few_colours(prefix: str, used: frozenset[str], left: int, palette: str, limit: int) -> Iterator[str]:
    """The codes that extend `prefix` by `left` pegs using at most `limit` distinct colours, in
    lexicographic order. Only prefixes that can still be completed are walked, so each code costs
    O(pegs x colours) however few there are (filtering the product walked 9^8 codes for 9)."""
    if left == 0:
        yield prefix
        return
    for colour in palette:
        grown = used if colour in used else used | {colour}
        if len(grown) <= limit:
            yield from _codes_with_few_colours(prefix + colour, grown, left - 1, palette, limit)


@lru_cache(maxsize=64)
def space_size(key: tuple[int, int, bool, int | None]) -> int:
    """How many valid codes there are (by counting, not enumerating)."""
    pegs, colors, repeats, _max_distinct = key
    if not repeats:
        return factorial(colors) // factorial(colors - pegs)
    return sum(comb(colors, k) * _surjections(pegs, k) for k in range(1, _distinct_limit(key) + 1))


def _distinct_limit(key: tuple[int, int, bool, int | None]) -> int:
    pegs, colors, _, max_distinct = key
    limit = min(pegs, colors)
    return limit if max_distinct is None else min(limit, max_distinct)


@cache
def _surjections(n: int, k: int) -> int:
    """Maps of n positions onto exactly k colours (k! · Stirling2(n, k))."""
    return sum((-1) ** i * comb(k, i) * (k - i) ** n for i in range(k + 1))


@lru_cache(maxsize=64)
def all_codes(key: tuple[int, int, bool, int | None]) -> tuple[str, ...]:
    """The valid codes of a small space, enumerated once (callers keep to small spaces)."""
    return tuple(iter_codes(key))


def random_code(key: tuple[int, int, bool, int | None], rng: random.Random) -> str:
    """A random valid code, without enumerating. Uniform when there is no max_distinct
    limit; with one, the number of distinct colours is drawn with its exact weight."""
    pegs, colors, repeats, _ = key
    palette = DIGITS[:colors]
    if not repeats:
        return "".join(rng.sample(palette, pegs))
    limit = _distinct_limit(key)
    if limit == min(pegs, colors):
        return "".join(rng.choices(palette, k=pegs))
    weights = [comb(colors, k) * _surjections(pegs, k) for k in range(1, limit + 1)]
    distinct = rng.choices(range(1, limit + 1), weights=weights)[0]
    chosen = rng.sample(palette, distinct)
    pegs_out = [""] * pegs
    for position, colour in zip(rng.sample(range(pegs), distinct), chosen, strict=False):
        pegs_out[position] = colour
    return "".join(c or rng.choice(chosen) for c in pegs_out)


@lru_cache(maxsize=4096)
def consistent_codes(key: tuple[int, int, bool, int | None], rows: tuple[tuple[str, int, int], ...]) -> tuple[str, ...]:
    """The valid codes that would have given every row its feedback (small spaces only);
    built incrementally from the answer for all rows but the last."""
    if not rows:
        return all_codes(key)
    guess, black, white = rows[-1]
    answer = (black, white)
    return tuple(c for c in consistent_codes(key, rows[:-1]) if feedback(c, guess) == answer)


# --- deterministic secrets for bots and listings --------------------------------------------------------
def listing_salt(state: MastermindState) -> str:
    """The one salt `legal_actions` lists set_code (and unrecoverable reveals) with."""
    text = f"MM1-list|{state.match_id}|{state.round}|{state.attempt}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def bot_secret(state: MastermindState, nonce: int) -> tuple[str, str]:
    """(code, salt) a manual-mode bot commits to with `nonce`: derived from the match, round,
    attempt and nonce, so the bot can find its own code again from the commitment alone.
    That makes the code derivable by anyone from public data: this is a bot for tests,
    benchmarks and self-play, never for playing a person (a real client keeps its own
    secret salt, as the web client does)."""
    digest = hashlib.sha256(f"MM1-bot|{state.match_id}|{state.round}|{state.attempt}|{nonce}".encode()).digest()
    return random_code(state.settings.key, random.Random(digest)), digest[:16].hex()


def recover_secret(state: MastermindState) -> tuple[str, str] | None:
    """The (code, salt) behind the running commitment if a bot made it, else None."""
    if state.commitment is None:
        return None
    if state.secret is not None and state.salt is not None:
        return state.secret, state.salt
    return _recover(state.match_id, state.settings, state.round, state.attempt, state.commitment)


@lru_cache(maxsize=1024)
def _recover(match_id: str, settings: Settings, round_: int, attempt: int, commitment: str) -> tuple[str, str] | None:
    probe = MastermindState(match_id=match_id, settings=settings, round=round_, attempt=attempt)
    for nonce in range(BOT_NONCES):
        code, salt = bot_secret(probe, nonce)
        if commitment_of(match_id, round_, attempt, code, salt) == commitment:
            return code, salt
    return None


def reveal_salt(state: MastermindState) -> str:
    """The salt `legal_actions` lists reveals with: the bot's own, or the listing salt."""
    recovered = recover_secret(state)
    return recovered[1] if recovered else listing_salt(state)


def feedback_shapes(pegs: int) -> Iterator[tuple[int, int]]:
    """Every (black, white) the manual codemaker may answer: b, w >= 0, b + w <= P, not (P-1, 1)."""
    for black in range(pegs + 1):
        for white in range(pegs - black + 1):
            if (black, white) != (pegs - 1, 1):
                yield black, white


# --- the game -------------------------------------------------------------------------------------------
ROLE_OF = {
    "set_code": "codemaker",
    "commit": "codemaker",
    "feedback": "codemaker",
    "reveal": "codemaker",
    "guess": "codebreaker",
}
PHASE_OF = {"set_code": "code", "commit": "code", "guess": "guess", "feedback": "feedback", "reveal": "reveal"}
MODE_OF = {"set_code": "auto", "commit": "manual", "feedback": "manual", "reveal": "manual"}


class Mastermind(Game):
    name = "mastermind"
    options_model = MastermindOptions
    action_models = MASTERMIND_ACTIONS
    state_model = MastermindState

    def normalise_options(self, options: dict[str, Any]) -> dict[str, Any]:
        parsed = super().normalise_options(options)
        pegs, colors, distinct = parsed["pegs"], parsed["colors"], parsed["max_distinct"]
        if parsed["rounds"] % 2:
            raise illegal(f"rounds must be even so both seats are codebreaker equally often; got {parsed['rounds']}")
        if not parsed["repeats"] and pegs > colors:
            raise illegal(f"repeats: false needs at least as many colours as pegs; {pegs} pegs, {colors} colours")
        if distinct is not None:
            if distinct > pegs:
                raise illegal(f"max_distinct {distinct} is more than the {pegs} pegs a code has")
            if distinct > colors:
                raise illegal(f"max_distinct {distinct} is more than the {colors} colours there are")
            if not parsed["repeats"] and distinct < pegs:
                raise illegal(
                    f"with repeats: false a code uses {pegs} distinct colours, "
                    f"so max_distinct {distinct} leaves no valid code"
                )
        return parsed

    def initial(self, options: dict[str, Any], match_id: str) -> MastermindState:
        return MastermindState(match_id=match_id, settings=Settings(**options))

    # --- turn --------------------------------------------------------------------------------------
    def to_move(self, state: MastermindState) -> tuple[int, ...]:
        phase = state.phase
        if phase == "guess":
            return (state.codebreaker,)
        if phase in ("code", "feedback", "reveal"):
            return (state.codemaker,)
        return ()

    def _awaiting(self, state: MastermindState) -> str:
        """What the try is waiting for, in words (for rejection messages)."""
        phase, cm, cb = state.phase, state.codemaker, state.codebreaker
        where = f"round {state.round} attempt {state.attempt}"
        if phase == "code":
            return f"the codemaker (seat {cm}) has not set the code of {where} yet"
        if phase == "guess":
            return f"waiting for the codebreaker's (seat {cb}) guess on row {len(state.rows) + 1} of {where}"
        if phase == "feedback":
            return f"waiting for the codemaker's (seat {cm}) feedback on row {len(state.rows) + 1} of {where}"
        if phase == "reveal":
            return f"waiting for the codemaker's (seat {cm}) reveal of {where}"
        return "the match is over"

    def _check_turn(self, state: MastermindState, seat: int, kind: str) -> None:
        mode = MODE_OF.get(kind)
        settings = state.settings
        if mode is not None and settings.feedback != mode:
            if kind == "set_code":
                raise illegal("this match uses feedback 'manual': the codemaker sends commit{commitment}, not set_code")
            if kind == "commit":
                raise illegal("this match uses feedback 'auto': the codemaker sends set_code{code,salt}, not commit")
            raise illegal(
                f"{kind} exists only with feedback 'manual'; in this 'auto' match the service "
                f"computes the feedback and reveals the code itself"
            )
        role = ROLE_OF[kind]
        if role == "codemaker" and seat != state.codemaker:
            raise illegal(f"{kind} is the codemaker's action; seat {seat} is the codebreaker in round {state.round}")
        if role == "codebreaker" and seat != state.codebreaker:
            raise illegal(f"guess is the codebreaker's action; seat {seat} is the codemaker in round {state.round}")
        if state.phase != PHASE_OF[kind]:
            awaiting = self._awaiting(state)
            if kind in ("set_code", "commit"):
                raise illegal(
                    f"the code of round {state.round} attempt {state.attempt} is already committed; {awaiting}"
                )
            if kind == "reveal":
                raise illegal(
                    f"no reveal due: the codemaker reveals after answering black == {settings.pegs} "
                    f"or after the feedback on the last row ({settings.max_rows}); {awaiting}"
                )
            raise illegal(f"no {kind} now: {awaiting}")

    # --- decide ------------------------------------------------------------------------------------
    def decide(self, state: MastermindState, seat: int, action: Any, at_ms: int) -> list[Event]:
        kind = action.type
        self._check_turn(state, seat, kind)
        if kind == "guess":
            return self._guess(state, action.code)
        if kind == "set_code":
            return self._set_code(state, action.code, action.salt)
        if kind == "commit":
            return self._commit(state, action.commitment)
        if kind == "feedback":
            return self._feedback(state, action.black, action.white)
        return self._reveal(state, action.code, action.salt)

    @staticmethod
    def _valid_code(state: MastermindState, pegs: list[int], what: str, secret: bool = False) -> str:
        problem = code_problem(state.settings, pegs, what, secret)
        if problem is not None:
            raise illegal(problem)
        return as_code(pegs)

    @staticmethod
    def _check_salt(salt: str) -> None:
        if not 16 <= len(salt) <= 128:
            raise illegal(f"the salt must be 16 to 128 hex characters, not {len(salt)} characters")
        if not HEX.issuperset(salt):
            raise illegal("the salt must be hex (0-9, a-f)")

    def _set_code(self, state: MastermindState, pegs: list[int], salt: str) -> list[Event]:
        code = self._valid_code(state, pegs, "the code", secret=True)
        self._check_salt(salt)
        commitment = commitment_of(state.match_id, state.round, state.attempt, code, salt)
        return [
            {
                "type": "secret_committed",
                "round": state.round,
                "attempt": state.attempt,
                "commitment": commitment,
                "_code": as_list(code),
                "_salt": salt,
            }
        ]

    def _commit(self, state: MastermindState, commitment: str) -> list[Event]:
        if len(commitment) != 64 or not HEX.issuperset(commitment):
            raise illegal(
                f"the commitment must be 64 hex characters (a sha256 digest); got {len(commitment)} "
                f"characters{'' if HEX.issuperset(commitment) else ', not all hex'}"
            )
        return [
            {
                "type": "secret_committed",
                "round": state.round,
                "attempt": state.attempt,
                "commitment": commitment.lower(),
            }
        ]

    def _guess(self, state: MastermindState, pegs: list[int]) -> list[Event]:
        code = self._valid_code(state, pegs, "the guess")
        row = len(state.rows) + 1
        guessed = {"type": "guessed", "round": state.round, "attempt": state.attempt, "row": row, "code": list(pegs)}
        if state.settings.feedback == "manual":
            return [guessed]
        assert state.secret is not None and state.salt is not None, "auto feedback: the service holds the secret"
        black, white = feedback(state.secret, code)
        events = [
            guessed,
            {
                "type": "feedback_given",
                "round": state.round,
                "attempt": state.attempt,
                "row": row,
                "black": black,
                "white": white,
            },
        ]
        settings = state.settings
        if black == settings.pegs:
            events += self._score(state, state.secret, state.salt, row)
        elif row == settings.max_rows:
            events += self._score(state, state.secret, state.salt, settings.max_rows + settings.unsolved_penalty)
        return events

    def _feedback(self, state: MastermindState, black: int, white: int) -> list[Event]:
        pegs = state.settings.pegs
        if black < 0 or white < 0:
            raise illegal(f"black and white must be >= 0; got black {black}, white {white}")
        if black + white > pegs:
            raise illegal(f"black + white = {black + white} is more than the {pegs} pegs")
        if (black, white) == (pegs - 1, 1):
            raise illegal(
                f"black {pegs - 1}, white 1 cannot happen: with {pegs - 1} pegs right, "
                f"the last peg cannot be a right colour in the wrong place"
            )
        return [
            {
                "type": "feedback_given",
                "round": state.round,
                "attempt": state.attempt,
                "row": len(state.rows) + 1,
                "black": black,
                "white": white,
            }
        ]

    def _reveal(self, state: MastermindState, pegs: list[int], salt: str) -> list[Event]:
        code = self._valid_code(state, pegs, "the revealed code", secret=True)
        self._check_salt(salt)
        settings = state.settings
        if commitment_of(state.match_id, state.round, state.attempt, code, salt) != state.commitment:
            return self._indication_error(state, code, salt, "bad_commitment", [])
        wrong = [
            n for n, (guess, black, white) in enumerate(state.rows, start=1) if feedback(code, guess) != (black, white)
        ]
        if wrong:
            return self._indication_error(state, code, salt, "wrong_feedback", wrong)
        solved = state.rows[-1][1] == settings.pegs
        points = len(state.rows) if solved else settings.max_rows + settings.unsolved_penalty
        return self._score(state, code, salt, points)

    def _score(self, state: MastermindState, code: str, salt: str, points: int) -> list[Event]:
        events: list[Event] = [
            {
                "type": "secret_revealed",
                "round": state.round,
                "attempt": state.attempt,
                "code": as_list(code),
                "salt": salt,
            },
            {"type": "round_scored", "round": state.round, "breaker": state.codebreaker, "points": points},
        ]
        if state.scored + 1 < state.settings.rounds:
            following = state.round + 1
            codemaker = 0 if following % 2 else 1
            events.append(
                {
                    "type": "round_started",
                    "round": following,
                    "attempt": 1,
                    "codemaker": codemaker,
                    "codebreaker": 1 - codemaker,
                }
            )
        return events

    def _indication_error(
        self, state: MastermindState, code: str, salt: str, reason: str, rows: list[int]
    ) -> list[Event]:
        error: Event = {
            "type": "indication_error",
            "round": state.round,
            "attempt": state.attempt,
            "rows": rows,
            "reason": reason,
            "codemaker": state.codemaker,
            "penalty": INDICATION_PENALTY,
            "code": as_list(code),
            "salt": salt,
        }
        if state.attempt >= MAX_ATTEMPTS:
            return [
                error,
                {
                    "type": "round_forfeited",
                    "round": state.round,
                    "codemaker": state.codemaker,
                    "attempts": state.attempt,
                },
            ]
        return [
            error,
            {
                "type": "round_started",
                "round": state.round,
                "attempt": state.attempt + 1,
                "codemaker": state.codemaker,
                "codebreaker": state.codebreaker,
            },
        ]

    # --- evolve ------------------------------------------------------------------------------------
    def evolve(self, state: MastermindState, event: Event) -> MastermindState:
        kind = event["type"]
        if kind == "guessed":
            return state.evolved(pending=as_code(event["code"]), phase="feedback")
        if kind == "feedback_given":
            black = event["black"]
            rows = (*state.rows, (state.pending, black, event["white"]))
            done = black == state.settings.pegs or len(rows) == state.settings.max_rows
            return state.evolved(rows=rows, pending=None, phase="reveal" if done else "guess")
        if kind == "secret_committed":
            code = event.get("_code")
            return state.evolved(
                phase="guess",
                commitment=event["commitment"],
                secret=None if code is None else as_code(code),
                salt=event.get("_salt"),
            )
        if kind == "secret_revealed":
            finished = FinishedTry(
                round=event["round"],
                attempt=event["attempt"],
                codemaker=state.codemaker,
                commitment=state.commitment,
                code=as_code(event["code"]),
                salt=event["salt"],
            )
            return state.evolved(tries=(*state.tries, finished), secret=None, salt=None, phase="scoring")
        if kind == "round_scored":
            totals = list(state.totals)
            totals[event["breaker"]] += event["points"]
            scored = state.scored + 1
            tries = (*state.tries[:-1], state.tries[-1].evolved(points=event["points"]))
            return state.evolved(
                totals=tuple(totals),
                scored=scored,
                tries=tries,
                phase="over" if scored >= state.settings.rounds else "scoring",
            )
        if kind == "indication_error":
            codemaker = event["codemaker"]
            totals, penalties = list(state.totals), list(state.penalties)
            totals[codemaker] += event["penalty"]
            penalties[codemaker] += event["penalty"]
            finished = FinishedTry(
                round=event["round"],
                attempt=event["attempt"],
                codemaker=codemaker,
                commitment=state.commitment,
                code=as_code(event["code"]),
                salt=event["salt"],
                error=event["reason"],
                wrong_rows=tuple(event["rows"]),
            )
            return state.evolved(
                totals=tuple(totals),
                penalties=tuple(penalties),
                tries=(*state.tries, finished),
                secret=None,
                salt=None,
                phase="scoring",
            )
        if kind == "round_started":
            return state.evolved(
                round=event["round"],
                attempt=event["attempt"],
                phase="code",
                commitment=None,
                secret=None,
                salt=None,
                rows=(),
                pending=None,
            )
        if kind == "round_forfeited":
            return state.evolved(phase="over", forfeited_by=event["codemaker"], rows=(), pending=None)
        raise ValueError(f"mastermind cannot evolve {kind!r}")

    # --- end, views ----------------------------------------------------------------------------------
    def scores(self, state: MastermindState) -> list[int]:
        return list(state.totals)

    def outcome(self, state: MastermindState) -> dict[str, Any] | None:
        if state.phase != "over":
            return None
        first, second = state.totals
        if state.forfeited_by is not None:
            return {"winner": 1 - state.forfeited_by, "reason": "indication_errors", "scores": [first, second]}
        if first == second:
            return {"winner": None, "reason": "draw", "scores": [first, second]}
        return {"winner": 0 if first < second else 1, "reason": "lowest_total", "scores": [first, second]}

    def view(self, state: MastermindState, seat: int | None) -> dict[str, Any]:
        rows: list[list[Any]] = [[g, b, w] for g, b, w in state.rows]
        if state.pending is not None:
            rows.append([state.pending, None, None])
        data: dict[str, Any] = {
            "options": _options_view(state.settings),
            "round": state.round,
            "attempt": state.attempt,
            "phase": state.phase,
            "codemaker": state.codemaker,
            "codebreaker": state.codebreaker,
            "commitment": state.commitment,
            "rows": rows,
            "totals": list(state.totals),
            "penalties": list(state.penalties),
            "tries": [_try_view(t) for t in state.tries],
        }
        if seat is not None and seat == state.codemaker and state.secret is not None:
            data["secret"] = {"code": state.secret, "salt": state.salt}
        return data

    # --- bots and listings ---------------------------------------------------------------------------
    def legal_actions(self, state: MastermindState, seat: int) -> Iterator[dict[str, Any]]:
        """Lazily. set_code: every valid code with one deterministic salt (`listing_salt`).
        commit: any 64-hex string is legal, so this lists one representative (the bot's commitment
        of nonce 0). guess: every valid code. feedback: every allowed shape. reveal: every valid
        code with one salt (`reveal_salt`): each is accepted (a wrong one ends in an indication error)."""
        if seat not in self.to_move(state):
            return
        phase, key = state.phase, state.settings.key
        if phase == "code":
            if state.settings.feedback == "auto":
                salt = listing_salt(state)
                for code in iter_codes(key):
                    yield {"type": "set_code", "code": as_list(code), "salt": salt}
            else:
                code, salt = bot_secret(state, 0)
                yield {
                    "type": "commit",
                    "commitment": commitment_of(state.match_id, state.round, state.attempt, code, salt),
                }
        elif phase == "guess":
            for code in iter_codes(key):
                yield {"type": "guess", "code": as_list(code)}
        elif phase == "feedback":
            for black, white in feedback_shapes(state.settings.pegs):
                yield {"type": "feedback", "black": black, "white": white}
        elif phase == "reveal":
            salt = reveal_salt(state)
            for code in iter_codes(key):
                yield {"type": "reveal", "code": as_list(code), "salt": salt}

    def random_action(self, state: MastermindState, seat: int, rng: random.Random) -> dict[str, Any] | None:
        """A bot move, without enumerating. The codebreaker mostly guesses a code consistent with
        the rows so far. A manual codemaker commits to a secret it can re-derive (`bot_secret`),
        answers correctly except now and then on attempt 1 (wrong feedback, wrong salt at the
        reveal) to exercise indication errors; from attempt 2 on it is always correct, so random
        playouts replay a round at most once."""
        if seat not in self.to_move(state):
            return None
        settings, phase, key = state.settings, state.phase, state.settings.key
        if phase == "guess":
            return {"type": "guess", "code": as_list(self._bot_guess(state, rng))}
        if phase == "code":
            if settings.feedback == "auto":
                return {
                    "type": "set_code",
                    "code": as_list(random_code(key, rng)),
                    "salt": f"{rng.getrandbits(128):032x}",
                }
            code, salt = bot_secret(state, rng.randrange(BOT_NONCES))
            return {
                "type": "commit",
                "commitment": commitment_of(state.match_id, state.round, state.attempt, code, salt),
            }
        recovered = recover_secret(state)
        if phase == "feedback":
            shapes = list(feedback_shapes(settings.pegs))
            if recovered is None:
                black, white = rng.choice(shapes)
            else:
                assert state.pending is not None, "feedback is asked for the pending guess"
                black, white = feedback(recovered[0], state.pending)
                if state.attempt == 1 and rng.random() < 0.03:
                    black, white = rng.choice([s for s in shapes if s != (black, white)])
            return {"type": "feedback", "black": black, "white": white}
        if phase == "reveal":
            if recovered is None:
                return {"type": "reveal", "code": as_list(random_code(key, rng)), "salt": listing_salt(state)}
            code, salt = recovered
            if state.attempt == 1 and rng.random() < 0.05:
                salt = f"{rng.getrandbits(128):032x}"
            return {"type": "reveal", "code": as_list(code), "salt": salt}
        return None

    @staticmethod
    def _bot_guess(state: MastermindState, rng: random.Random) -> str:
        key = state.settings.key
        if rng.random() < 0.75:
            if space_size(key) <= CONSISTENT_SPACE:
                candidates = consistent_codes(key, state.rows)
                if candidates:
                    return rng.choice(candidates)
            else:
                for _ in range(60):
                    code = random_code(key, rng)
                    if all(feedback(code, g) == (b, w) for g, b, w in state.rows):
                        return code
        return random_code(key, rng)

    def render(self, state: MastermindState) -> str:
        s = state.settings
        lines = [
            f"Mastermind {s.pegs} pegs × {s.colors} colours, {s.feedback} feedback · round {state.round}/{s.rounds} "
            f"attempt {state.attempt} · codemaker seat {state.codemaker}, "
            f"codebreaker seat {state.codebreaker} · {state.phase}"
        ]
        if state.commitment and state.phase in ("guess", "feedback", "reveal"):
            lines.append(f"    commitment {state.commitment[:16]}…   secret {' '.join('?' * s.pegs)}")
        for number, (guess, black, white) in enumerate(state.rows, start=1):
            lines.append(f"{number:>3}  {letters(guess)}   {'●' * black}{'○' * white}  (black {black}, white {white})")
        if state.pending is not None:
            lines.append(f"{len(state.rows) + 1:>3}  {letters(state.pending)}   (awaiting feedback)")
        for t in state.tries:
            rows = f", rows {','.join(map(str, t.wrong_rows))}" if t.wrong_rows else ""
            result = (
                f"{t.points} points to seat {1 - t.codemaker}"
                if t.error is None
                else f"indication error ({t.error}{rows})"
            )
            lines.append(f"    round {t.round}.{t.attempt}: seat {t.codemaker}'s code {letters(t.code)} → {result}")
        lines.append(
            f"    totals: seat 0 {state.totals[0]}, seat 1 {state.totals[1]} "
            f"(penalties {state.penalties[0]}, {state.penalties[1]})"
        )
        return "\n".join(lines)


def _options_view(s: Settings) -> dict[str, Any]:
    return {
        "pegs": s.pegs,
        "colors": s.colors,
        "repeats": s.repeats,
        "max_distinct": s.max_distinct,
        "max_rows": s.max_rows,
        "rounds": s.rounds,
        "feedback": s.feedback,
        "unsolved_penalty": s.unsolved_penalty,
    }


def _try_view(finished: FinishedTry) -> dict[str, Any]:
    data: dict[str, Any] = {
        "round": finished.round,
        "attempt": finished.attempt,
        "codemaker": finished.codemaker,
        "commitment": finished.commitment,
        "code": finished.code,
        "salt": finished.salt,
    }
    if finished.error is None:
        data["points"] = finished.points
    else:
        data["error"] = finished.error
        data["wrong_rows"] = list(finished.wrong_rows)
    return data


GAME = Mastermind()
