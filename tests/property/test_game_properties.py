"""Properties every game must have, checked through the real fold (OpenSpiel-style):

- random legal playouts always end;
- at every ply the match state survives a JSON round trip unchanged;
- folding the same log twice gives identical result bytes;
- every event, result and outcome fits the wire schema; no private field is public;
- evolve over the emitted events reproduces the state the fold built;
- `legal_actions` agrees with `decide` (listed actions are accepted; random candidates are
  accepted exactly when they are listed, where the listing is small enough to hold);
- random garbage never raises: it is rejected.

Per game, `tests/property/hooks_<game>.py` supplies `candidate(board, seat, rng)` (a random,
often illegal, action) and `canonical(action)` (a hashable form that ignores order where the
rules do).
"""

from __future__ import annotations

import importlib
import random
from itertools import islice

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games import match as lifecycle
from games.fold import Replayer, encode, read, step
from games.match import LIFECYCLE_VIEW_KEYS, MatchState
from games.registry import GAME_MODULES
from schemas.catalog import event_model
from schemas.records import OutcomeRecord, ResultRecord
from tests.support import GAME_OPTIONS, Match, random_playout

LISTING_CAP = 3000


def available_games() -> list[str]:
    names = []
    for name in GAME_MODULES:
        try:
            importlib.import_module(GAME_MODULES[name])
            importlib.import_module(f"tests.property.hooks_{name}")
        except ModuleNotFoundError:
            continue
        names.append(name)
    return names


CASES = [(game, i) for game in available_games() for i in range(len(GAME_OPTIONS[game]))]
PROPERTY_SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def hooks(game: str):
    return importlib.import_module(f"tests.property.hooks_{game}")


@pytest.mark.parametrize("game,option_index", CASES)
@PROPERTY_SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_random_playouts_end_and_fold_consistently(game, option_index, seed):
    options = GAME_OPTIONS[game][option_index]
    played = random_playout(game, options, seed)
    assert played.state.status == "over"
    assert played.state.outcome["winner"] in (0, 1, None)

    previous = None
    for raw, taken in zip(played.records, played.steps, strict=False):
        state = taken.state
        # JSON round trip, exactly.
        assert MatchState.from_json(orjson.loads(orjson.dumps(state.to_json()))) == state
        assert orjson.loads(state.json_bytes()) == state.to_json()  # the one-pass encoding, the same JSON
        # Event-level evolve rebuilds what the fold built.
        rebuilt = previous
        for event in taken.result["events"] if previous is None else _all_events(previous, raw):
            rebuilt = lifecycle.evolve(rebuilt, event)
        if previous is not None and previous.status == "active" and state.game_actions > previous.game_actions:
            seat = _acting_seat(previous, orjson.loads(raw)["player"])
            rebuilt = lifecycle.count_game_action(rebuilt, seat, orjson.loads(raw)["at"])
        rebuilt = rebuilt.evolved(seq=state.seq, recent_ids=state.recent_ids)
        assert rebuilt == state
        # The game's view never shadows what the lifecycle puts in every view.
        assert not LIFECYCLE_VIEW_KEYS & set(state.rules.view(state.board, None))
        # Contract conformance; no private field leaves the fold.
        ResultRecord.model_validate(taken.result)
        for event in taken.result["events"]:
            assert not any(key.startswith("_") for key in event)
            event_model(game, event["type"]).model_validate(event)
        if taken.outcome is not None:
            OutcomeRecord.model_validate(taken.outcome)
        previous = state

    again = Replayer()
    first = [encode(s.result) for s in played.steps]
    second = [encode(again.feed(raw).result) for raw in played.records]
    assert first == second


def _all_events(previous: MatchState, raw: bytes):
    """The full (private fields included) events of one record, decided afresh."""
    data = orjson.loads(raw)
    return lifecycle.decide(previous, data["match_id"], data["player"], data["action"], data["at"])


def _acting_seat(state: MatchState, player: str) -> int:
    return next(s for s in state.to_move() if state.seats[s] == player)


@pytest.mark.parametrize("game,option_index", CASES)
@PROPERTY_SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_legal_actions_agree_with_decide(game, option_index, seed):
    rng = random.Random(seed)
    played = random_playout(game, GAME_OPTIONS[game][option_index], seed)
    hook = hooks(game)
    plies = [s.state for s in played.steps if s.state.status == "active"]
    for state in rng.sample(plies, min(6, len(plies))):
        seat = state.to_move()[0]
        player = state.seats[seat]
        listed = list(islice(state.rules.legal_actions(state.board, seat), LISTING_CAP + 1))
        assert listed, "a seat to move has at least one legal action"
        for action in rng.sample(listed, min(15, len(listed))):
            result = _try(state, player, action)
            assert result["status"] == "accepted", (action, result.get("reason"))
        if len(listed) > LISTING_CAP:
            continue
        legal = {hook.canonical(a) for a in listed}
        for _ in range(25):
            candidate = hook.candidate(state.board, seat, rng)
            result = _try(state, player, candidate)
            expected = hook.canonical(candidate) in legal
            assert (result["status"] == "accepted") == expected, (candidate, result.get("reason"))
            if not expected:
                assert result["reason"]["code"] in ("illegal", "malformed"), result["reason"]


def _try(state: MatchState, player: str, action: dict) -> dict:
    raw = orjson.dumps(
        {
            "v": 1,
            "event_id": "probe",
            "match_id": state.match_id,
            "player": player,
            "at": "2026-11-29T23:00:00Z",
            "action": action,
        }
    )
    return step(state, read(raw)).result


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize("game", available_games())
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_garbage_is_rejected_never_raised(game, data):
    match = Match("g1")
    match.create(game, GAME_OPTIONS[game][0])
    state = match.state
    action_types = [*sorted(state.rules._action_types), "create", "join", "resign", "abort", "claim_timeout", "nope"]
    fuzzed_action = data.draw(
        st.dictionaries(st.text(max_size=8), json_values, max_size=4).map(
            lambda d: {**d, "type": data.draw(st.sampled_from(action_types))}
        )
    )
    envelope = {
        "v": 1,
        "event_id": "x1",
        "match_id": "g1",
        "player": data.draw(st.sampled_from(["alice", "bob", "eve"])),
        "at": "2026-11-29T22:30:00Z",
        "action": fuzzed_action,
    }
    mutation = data.draw(st.sampled_from(["none", "drop", "extra", "retype", "raw"]))
    if mutation == "drop":
        envelope.pop(data.draw(st.sampled_from(sorted(envelope))))
    elif mutation == "extra":
        envelope[data.draw(st.text(min_size=1, max_size=6))] = data.draw(json_values)
    elif mutation == "retype":
        envelope[data.draw(st.sampled_from(sorted(envelope)))] = data.draw(json_values)
    raw = data.draw(st.binary(max_size=64)) if mutation == "raw" else orjson.dumps(envelope)
    result = match.replayer.feed(raw).result
    ResultRecord.model_validate(result)
    if result["status"] == "rejected":
        assert result["reason"]["code"] in (
            "malformed",
            "illegal",
            "not_seated",
            "not_your_turn",
            "match_exists",
            "already_seated",
            "not_timed_out",
            "unknown_match",
            "stale",
        )
        assert result["reason"]["message"]
