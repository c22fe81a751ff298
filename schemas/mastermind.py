"""Mastermind: options, actions and events on the wire (rules: docs/rules/mastermind.md).

Codes are lists of colour numbers in `[0, colors)`. Shape rules that depend on the options
(code length, colour range, repeats, max_distinct) and the rule-level checks the rules file
calls `illegal` (salt and commitment format, feedback shapes) are checked by the game, so the
action models here only fix the JSON types.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, StringConstraints

from .base import Action, Event, Seat, Strict
from .lifecycle import LifecycleEndReason, Outcome
from .views import VIEW_CONFIG, MatchView, ViewPart

SALT_PATTERN = r"^[0-9a-fA-F]{16,128}$"
COMMITMENT_PATTERN = r"^[0-9a-f]{64}$"


class MastermindOptions(Strict):
    pegs: StrictInt = Field(default=4, ge=2, le=8, description="code length P")
    colors: StrictInt = Field(default=6, ge=2, le=10, description="number of colours C; codes use 0..C-1")
    repeats: StrictBool = Field(default=True, description="whether a colour may appear more than once")
    max_distinct: StrictInt | None = Field(
        default=None, ge=1, le=10, description="at most this many distinct colours in a code (null: no limit)"
    )
    max_rows: StrictInt = Field(default=12, ge=1, le=50, description="rows the codebreaker may place per round")
    rounds: StrictInt = Field(default=2, ge=2, le=100, description="scored rounds; must be even")
    feedback: Literal["auto", "manual"] = Field(
        default="auto",
        description="auto: the service computes feedback; manual: the codemaker does, checked at the reveal",
    )
    unsolved_penalty: StrictInt = Field(
        default=2, ge=0, le=100, description="extra points on top of max_rows for an unsolved code"
    )


Code = list[StrictInt]


class SetCode(Action):
    """Auto mode: the codemaker hands the secret to the service."""

    type: Literal["set_code"]
    code: Code = Field(max_length=64)
    salt: StrictStr = Field(max_length=256, description="16-128 hex characters (checked by the rules)")


class Commit(Action):
    """Manual mode: the codemaker commits to a secret it keeps."""

    type: Literal["commit"]
    commitment: StrictStr = Field(max_length=256, description="64 hex characters: sha256 of the MM1 string")


class Guess(Action):
    type: Literal["guess"]
    code: Code = Field(max_length=64)


class Feedback(Action):
    """Manual mode: the codemaker's answer to the last guess."""

    type: Literal["feedback"]
    black: StrictInt
    white: StrictInt


class Reveal(Action):
    """Manual mode: the codemaker opens its commitment after the last feedback of a try."""

    type: Literal["reveal"]
    code: Code = Field(max_length=64)
    salt: StrictStr = Field(max_length=256)


MASTERMIND_ACTIONS = (SetCode, Commit, Guess, Feedback, Reveal)


class RoundStarted(Event):
    """A new try begins (round 1 attempt 1 begins with `match_started`, without this event)."""

    type: Literal["round_started"]
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    codemaker: Seat
    codebreaker: Seat


class SecretCommitted(Event):
    type: Literal["secret_committed"]
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    commitment: str = Field(pattern=COMMITMENT_PATTERN)


class Guessed(Event):
    type: Literal["guessed"]
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    row: int = Field(ge=1)
    code: list[int]


class FeedbackGiven(Event):
    type: Literal["feedback_given"]
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    row: int = Field(ge=1)
    black: int = Field(ge=0)
    white: int = Field(ge=0)


class SecretRevealed(Event):
    type: Literal["secret_revealed"]
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    code: list[int]
    salt: str = Field(pattern=SALT_PATTERN)


class RoundScored(Event):
    type: Literal["round_scored"]
    round: int = Field(ge=1)
    breaker: Seat
    points: int = Field(ge=0)


class IndicationError(Event):
    """Manual mode: the reveal did not match the commitment or the feedback given."""

    type: Literal["indication_error"]
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    rows: list[int] = Field(description="rows whose feedback was wrong for the revealed code ([] for bad_commitment)")
    reason: Literal["bad_commitment", "wrong_feedback"]
    codemaker: Seat
    penalty: int = Field(ge=0, description="points added to the codemaker's total (3)")
    code: list[int] = Field(description="the code the codemaker revealed")
    salt: str = Field(pattern=SALT_PATTERN)


class RoundForfeited(Event):
    """Manual mode: the last allowed try of a round (5) ended in an indication error; the match
    ends and the codemaker loses (reason `indication_errors`)."""

    type: Literal["round_forfeited"]
    round: int = Field(ge=1)
    codemaker: Seat
    attempts: int = Field(ge=1, description="tries of the round, every one an indication error")


MASTERMIND_EVENTS = (
    RoundStarted,
    SecretCommitted,
    Guessed,
    FeedbackGiven,
    SecretRevealed,
    RoundScored,
    IndicationError,
    RoundForfeited,
)


# --- the public view ----------------------------------------------------------------------------
# In a view a code is a string of colour digits ("0123"), not a list as in actions and events.
CodeText = Annotated[str, StringConstraints(pattern=r"^[0-9]{2,8}$")]


class MastermindOutcome(Outcome):
    reason: Literal[LifecycleEndReason, "lowest_total", "draw", "indication_errors"]
    scores: list[int] = Field(min_length=2, max_length=2, description="totals per seat, penalties included")


class MastermindOptionsView(MastermindOptions):
    """The options in a view: every one present."""

    model_config = VIEW_CONFIG


# The fields of every finished try, its secret revealed (no docstring: it would describe both).
class _RevealedTry(ViewPart):
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    codemaker: Seat
    commitment: str = Field(pattern=COMMITMENT_PATTERN)
    code: CodeText = Field(description="the revealed code")
    salt: str = Field(pattern=SALT_PATTERN)


class ScoredTry(_RevealedTry):
    points: int = Field(ge=0, description="the codebreaker's points")


class FailedTry(_RevealedTry):
    """A try that ended in an indication error (replayed as the next attempt)."""

    error: Literal["bad_commitment", "wrong_feedback"]
    wrong_rows: list[int] = Field(description="rows whose feedback was wrong ([] for bad_commitment)")


Row = tuple[CodeText, int | None, int | None]


class MastermindView(MatchView):
    """The running try's rows and the finished tries; never the running secret."""

    game: Literal["mastermind"]
    outcome: MastermindOutcome | None
    options: MastermindOptionsView
    round: int = Field(ge=1)
    attempt: int = Field(ge=1)
    phase: Literal["code", "guess", "feedback", "reveal", "scoring", "over"]
    codemaker: Seat
    codebreaker: Seat
    commitment: str | None = Field(pattern=COMMITMENT_PATTERN, description="of the running try, once committed")
    rows: list[Row] = Field(
        description="[guess code, black, white] per row of the running try; a guess awaiting "
        "manual feedback is last, with null black and white"
    )
    totals: list[int] = Field(min_length=2, max_length=2, description="points per seat, penalties included")
    penalties: list[int] = Field(min_length=2, max_length=2)
    tries: list[ScoredTry | FailedTry] = Field(description="every finished try, in order")


MASTERMIND_VIEW = MastermindView
MASTERMIND_OUTCOME = MastermindOutcome
