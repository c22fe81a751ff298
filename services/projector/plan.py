"""The projector's pure core: a batch of consumed records -> the Redis commands that apply it.

No Redis, no Kafka here. The runner reads what deciding needs (`needs` -> `Known`: the stored
seq of each match, which outcomes were applied, the players' standings), calls `plan`, and
runs the commands in one atomic script together with the new consumer offsets.

- An accepted result is applied once per (match_id, seq): only when its seq is newer than the
  stored one (a repeat, a `duplicate` answer or a rejected result changes nothing but is
  still announced on the match's live channel).
- An outcome is applied once per match_id (the `{p}match:{id}:outcome` key marks it), and only
  when it agrees with the match the projection saw finish (`refusals`, decided by the runner:
  see runner.Projection.confirm); one that does not changes nothing and is counted as refused.
- Every value comes from the records (times from `at`), so a rebuild gives the same bytes.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import orjson

from services.common.record_checks import ms as _ms
from services.common.record_checks import outcome_problem, result_problem
from services.common.redis_keys import Keys

from .glicko2 import NEW_PLAYER, Rating, rate_match

log = logging.getLogger("plylog.projector")

LIFECYCLE_EVENTS = frozenset({"match_created", "seat_joined", "match_started", "match_ended"})
RECENT_LIMIT = 1000  # finished matches kept in each partition's `matches:...recent` list (the latest by ended time)
HISTORY_LIMIT = 1000  # rated outcomes kept in a player's rating history of a game
PLAYER_RECENT_LIMIT = 100  # finished matches kept per player (their page)
LIST_OF_STATUS = {"waiting": "open", "active": "active", "over": "recent"}
Command = tuple[Any, ...]


@dataclass(frozen=True)
class Consumed:
    """One Kafka record as the runner hands it over."""

    topic: str
    partition: int
    offset: int
    value: bytes | None


@dataclass(frozen=True)
class Item:
    """A decoded record: kind is "result", "outcome" or "unreadable" (then `why` says why)."""

    consumed: Consumed
    kind: str
    data: dict | None = None
    why: str = ""


@dataclass(frozen=True)
class Standing:
    """A player's record in one game."""

    played: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0
    rating: Rating = NEW_PLAYER

    FIELDS = ("played", "wins", "losses", "draws", "rating", "rd", "volatility")

    @classmethod
    def from_values(cls, values: list) -> Standing:
        """From HMGET of `player_fields(game)` (None where missing)."""
        if values[0] is None:
            return cls()
        played, wins, losses, draws = (int(v) for v in values[:4])
        return cls(played, wins, losses, draws, Rating(float(values[4]), float(values[5]), float(values[6])))

    def values(self) -> list[str]:
        r = self.rating
        return [
            str(self.played),
            str(self.wins),
            str(self.losses),
            str(self.draws),
            repr(r.rating),
            repr(r.rd),
            repr(r.volatility),
        ]


def player_fields(game: str) -> list[str]:
    return [f"{game}:{name}" for name in Standing.FIELDS]


@dataclass(frozen=True)
class Needs:
    """What must be read from Redis before a batch can be planned."""

    matches: frozenset[tuple[int, str]]  # (results partition, match id)
    outcomes: frozenset[str]
    standings: frozenset[tuple[str, str]]  # (player, game)


@dataclass
class Known:
    """What Redis holds of it (updated in place while planning, so it stays true for the batch)."""

    seqs: dict[str, int] = field(default_factory=dict)  # match id -> stored seq (absent: 0)
    outcomes_applied: set[str] = field(default_factory=set)
    standings: dict[tuple[str, str], Standing] = field(default_factory=dict)


@dataclass
class Plan:
    commands: list[Command]
    counts: Counter


# --- decoding -------------------------------------------------------------------------------------
def decode(records: Iterable[Consumed], outcomes_topic: str) -> list[Item]:
    items = []
    for consumed in records:
        kind = "outcome" if consumed.topic == outcomes_topic else "result"
        try:
            data = orjson.loads(consumed.value) if consumed.value is not None else None
        except orjson.JSONDecodeError as error:
            items.append(Item(consumed, "unreadable", why=f"not JSON: {error}"))
            continue
        problem = (result_problem if kind == "result" else outcome_problem)(data)
        items.append(Item(consumed, "unreadable", why=problem) if problem else Item(consumed, kind, data))
    return items


def fresh(data: dict) -> bool:
    """An accepted result that is not a `duplicate` answer: the only kind that changes a match."""
    return data["status"] == "accepted" and not data.get("duplicate")


def needs(items: Iterable[Item]) -> Needs:
    matches, outcomes, standings = set(), set(), set()
    for item in items:
        if item.kind == "result" and fresh(item.data):
            matches.add((item.consumed.partition, item.data["match_id"]))
        elif item.kind == "outcome":
            outcomes.add(item.data["match_id"])
            standings.update((p, item.data["game"]) for p in item.data["players"] if isinstance(p, str))
    return Needs(frozenset(matches), frozenset(outcomes), frozenset(standings))


# --- planning -------------------------------------------------------------------------------------
@dataclass
class _Writes:
    """The batch's effect, coalesced so that it equals applying its results one by one: a match's
    hash gets the fields its results set (the latest value of each), a list membership its last
    ZADD or ZREM, counters are summed. Matches are keyed by (partition, match id): the partition
    names the hash tag of their keys."""

    matches: dict[tuple[int, str], list[tuple[dict, bool]]] = field(default_factory=dict)  # -> [(result, settled)]
    placements: dict[tuple[str, str], int | None] = field(default_factory=dict)  # (list key, match id) -> score
    trimmed: set[str] = field(default_factory=set)  # recent lists that got a match
    deadlines: dict[tuple[int, str], int | None] = field(default_factory=dict)
    log: list[tuple[int, str, int, bytes]] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)  # (key, field) -> increment
    standings: dict[tuple[str, str], Standing] = field(default_factory=dict)
    outcomes: dict[str, bytes] = field(default_factory=dict)
    history: list[tuple[str, int, bytes]] = field(default_factory=list)  # (key, n, entry)
    recent: list[tuple[str, int, str]] = field(default_factory=list)  # (key, ended ms, match id)
    announcements: list[tuple[str, bytes]] = field(default_factory=list)


def plan(
    items: Iterable[Item], known: Known, keys: Keys, publish: bool = True, refusals: dict[int, str] | None = None
) -> Plan:
    """The commands that apply `items` on top of `known`; `known` is updated as it goes. A result's
    keys are tagged with the partition it was read from (its match's home partition), an outcome's
    with {outcomes}: the runner plans and applies one partition at a time, so that every script
    touches one hash slot. `refusals`: outcome offset -> why it disagrees with its match ("" or
    absent: it agrees)."""
    writes, counts, refusals = _Writes(), Counter(), refusals or {}
    for item in items:
        kind = item.kind
        if kind != "unreadable":
            try:
                if kind == "result":
                    verdict = _apply_result(writes, item.data, known, keys, item.consumed.partition)
                else:
                    refusal = refusals.get(item.consumed.offset, "")
                    verdict = _apply_outcome(writes, item.data, known, keys, refusal, item.consumed)
            except Exception as error:  # noqa: BLE001 - a record we cannot use: skip it, never stop on it
                item = Item(item.consumed, "unreadable", why=f"{type(error).__name__}: {error}")
            else:
                counts[verdict] += 1
                if kind == "result" and publish and isinstance(item.data.get("match_id"), str):
                    writes.announcements.append((keys.live(item.data["match_id"]), item.consumed.value))
        counts[item.kind] += 1
        if item.kind == "unreadable":
            c = item.consumed
            log.warning("skipping unreadable record %s[%d]@%d: %s", c.topic, c.partition, c.offset, item.why)
    return Plan(_commands(writes, keys), counts)


def _apply_result(w: _Writes, result: dict, known: Known, keys: Keys, partition: int) -> str:
    """Everything is computed before anything is written, so a bad record changes nothing."""
    if result["status"] == "rejected":
        return "rejected"
    if result.get("duplicate"):
        return "duplicates"
    match_id, seq = result["match_id"], result["seq"]
    stored = known.seqs.get(match_id, 0)
    if seq <= stored:
        return "stale"
    view, at_ms = result["view"], _ms(result["at"])
    game, status = view["game"], view["status"]
    entry = log_entry(result)
    score, due = list_score(view, at_ms), deadline(view)
    types = [e.get("type") for e in result["events"] if isinstance(e, dict)]
    counted = activity(types)
    day = utc_day(at_ms)
    if seq != stored + 1:
        log.warning("match %s: result seq %d follows stored seq %d (results are missing)", match_id, seq, stored)
    # A move that follows the stored one and has no lifecycle event leaves the match's status,
    # seats and times as they were: only its position (view, seq) and its list score change.
    settled = seq == stored + 1 and LIFECYCLE_EVENTS.isdisjoint(types)
    known.seqs[match_id] = seq
    w.matches.setdefault((partition, match_id), []).append((result, settled))
    w.log.append((partition, match_id, seq, entry))
    _place(w, keys, partition, match_id, game, LIST_OF_STATUS[status], score, settled)
    for player in {p for p in view.get("seats") or () if isinstance(p, str)}:  # "my games"
        w.placements[(keys.player_matches(player, partition), match_id)] = None if status == "over" else at_ms
    w.deadlines[(partition, match_id)] = due
    for name, increment in counted.items():
        w.counters[(keys.activity(game, day, partition), name)] += increment
        w.counters[(keys.totals(game, partition), name)] += increment
    return "applied"


def _place(
    w: _Writes, keys: Keys, partition: int, match_id: str, game: str, listed: str, score: int, settled: bool
) -> None:
    """In the list of its status (all games' and its game's); out of the others unless `settled`."""
    for scope in (None, game):
        for which in ("open", "active", "recent") if not settled else (listed,):
            w.placements[(keys.matches(which, scope, partition), match_id)] = score if which == listed else None
        if listed == "recent":
            w.trimmed.add(keys.matches("recent", scope, partition))


def _fields(results: list[tuple[dict, bool]]) -> dict[str, str]:
    """The hash fields a match's results of one batch set, as if set one after the other."""
    fields: dict[str, str] = {}
    for result, settled in reversed(results):
        if fields and settled:
            continue  # a settled result sets no field its successor does not set again
        for name, value in match_fields(result, settled).items():
            fields.setdefault(name, value)
    return fields


def match_fields(result: dict, settled: bool = False) -> dict[str, str]:
    """The match hash's fields of an accepted result; `settled`: only those a move changes."""
    view = result["view"]
    if settled:
        return {"seq": str(result["seq"]), "view": orjson.dumps(view).decode(), "updated_at": result["at"]}
    fields = {
        "seq": str(result["seq"]),
        "status": view["status"],
        "game": view["game"],
        "seats": orjson.dumps(view.get("seats")).decode(),
        "view": orjson.dumps(view).decode(),
        "updated_at": result["at"],
    }
    for name in ("created_at", "started_at", "ended_at"):
        if view.get(name) is not None:
            fields[name] = view[name]
    if view.get("outcome") is not None:
        fields["outcome"] = orjson.dumps(view["outcome"]).decode()
    if view.get("rated") is False:  # an unrated create or an adjudication (never set back)
        fields["rated"] = "0"
    return fields


def log_entry(result: dict) -> bytes:
    """The match log's entry of an accepted result; `offset` (when the result names its move's
    offset on plylog.moves) lets time travel read the match's own records, not its partition."""
    entry = {
        "seq": result["seq"],
        "event_id": result["event_id"],
        "player": result["player"],
        "at": result["at"],
        "events": result["events"],
    }
    source = result.get("source")
    if isinstance(source, dict) and type(source.get("offset")) is int:
        entry["offset"] = source["offset"]
    return orjson.dumps(entry)


def list_score(view: dict, at_ms: int) -> int:
    """open: created; active: this (latest) update; recent: ended."""
    status = view["status"]
    if status == "waiting" and view.get("created_at"):
        return _ms(view["created_at"])
    if status == "over" and view.get("ended_at"):
        return _ms(view["ended_at"])
    return at_ms


def deadline(view: dict) -> int | None:
    """Epoch ms at which the seat to move runs out of time; None when no clock runs."""
    clock = view.get("clock")
    if view["status"] != "active" or not clock or clock.get("since_ms") is None or not view.get("to_move"):
        return None
    return clock["since_ms"] + min(clock["remaining_ms"][seat] for seat in view["to_move"])


def activity(types: list) -> Counter:
    """started / finished / moves (an accepted game action: any event beyond the lifecycle), from
    a result's event types."""
    counts = Counter()
    if "match_started" in types:
        counts["started"] += 1
    if "match_ended" in types:
        counts["finished"] += 1
    if any(t not in LIFECYCLE_EVENTS for t in types):
        counts["moves"] += 1
    return counts


def utc_day(ms: int) -> str:
    return _day_name(ms // 86_400_000)


@lru_cache(maxsize=4096)
def _day_name(day: int) -> str:
    return datetime.fromtimestamp(day * 86_400, tz=UTC).strftime("%Y-%m-%d")


def _apply_outcome(
    w: _Writes, outcome: dict, known: Known, keys: Keys, refusal: str = "", consumed: Consumed | None = None
) -> str:
    match_id, game, players = outcome["match_id"], outcome["game"], outcome["players"]
    if refusal:  # before the repeat check: a record that disagrees is refused even after the true one
        where = f"{consumed.topic}[{consumed.partition}]@{consumed.offset}" if consumed else "?"
        log.warning("refused the outcome %s for match %s (players %s): %s", where, match_id, players, refusal)
        return "outcomes_refused"
    if match_id in known.outcomes_applied:
        return "outcomes_repeated"
    mark = {
        "match_id": match_id,
        "game": game,
        "players": players,
        "outcome": outcome["outcome"],
        "rated": bool(outcome.get("rated")),
        "ratings": None,
    }
    after: list[Standing] = []
    if rated(outcome):
        before = [known.standings.get((p, game), Standing()) for p in players]
        after = scored(before, outcome["outcome"]["winner"])
        mark["ratings"] = [
            {"player": p, "before": asdict(b.rating), "after": asdict(a.rating)}
            for p, b, a in zip(players, before, after, strict=False)
        ]
    encoded = orjson.dumps(mark)
    known.outcomes_applied.add(match_id)
    ended_ms = _ms(outcome["ended_at"])
    for player in {p for p in players if isinstance(p, str)}:
        w.recent.append((keys.player_recent(player), ended_ms, match_id))
    for seat, standing in enumerate(after):
        w.history.append(_history_entry(keys, outcome, seat, standing))
    for player, standing in zip(players, after, strict=False):
        known.standings[(player, game)] = w.standings[(player, game)] = standing
    w.outcomes[match_id] = encoded
    return "rated" if after else "unrated"


def _history_entry(keys: Keys, outcome: dict, seat: int, standing: Standing) -> tuple[str, int, bytes]:
    """A player's rating after a rated outcome: numbered by their rated matches, so a rebuild from
    the outcomes log gives the same entries."""
    players, winner = outcome["players"], outcome["outcome"]["winner"]
    entry = {
        "n": standing.played,
        "match_id": outcome["match_id"],
        "ended_at": outcome["ended_at"],
        "rating": round(standing.rating.rating, 1),
        "rd": round(standing.rating.rd, 1),
        "opponent": players[1 - seat],
        "result": "draw" if winner is None else ("win" if winner == seat else "loss"),
    }
    key = keys.rating_history(players[seat], outcome["game"])
    return key, standing.played, orjson.dumps(entry)


#: the match hash's fields an outcome is checked against (`disagreement`)
FINISHED_FIELDS = ("status", "game", "seats", "outcome", "seq", "rated")


def disagreement(outcome: dict, match: list) -> str:
    """Why an outcome record disagrees with its match as the projection holds it (HMGET of
    FINISHED_FIELDS), "" when it agrees: the match finished, in the same game, with the same players
    in the same seats, the same outcome (winner, reason, scores), the same final seq, and `rated`
    as the rules say (not aborted, not unrated by its create or an adjudication, two distinct
    players). Only a finished match's fields are final."""
    status, game, seats, finished, seq, unrated = (v.decode() if isinstance(v, bytes) else v for v in match)
    if status is None:
        return "no such match in the projection"
    if status != "over":
        return f"the match is {status}, not over"
    seats, finished = orjson.loads(seats), orjson.loads(finished) if finished else None
    aborted = isinstance(finished, dict) and finished.get("reason") == "aborted"
    should_rate = (
        not aborted and unrated != "0" and isinstance(seats, list) and len(seats) == 2 and seats[0] != seats[1]
    )
    differs = [
        name
        for name, same in (
            ("game", outcome["game"] == game),
            ("players", outcome["players"] == seats),
            ("outcome", outcome["outcome"] == finished),
            ("seq", outcome.get("seq") in (None, int(seq or 0))),
            ("rated", bool(outcome.get("rated")) == should_rate),
        )
        if not same
    ]
    return f"its {', '.join(differs)} differ from the finished match's" if differs else ""


def rated(outcome: dict) -> bool:
    """Rated matches only count: two distinct players, not aborted, not unrated (the rules worker's `rated`)."""
    players = outcome["players"]
    return bool(outcome.get("rated")) and all(isinstance(p, str) for p in players) and players[0] != players[1]


def scored(before: list[Standing], winner: int | None) -> list[Standing]:
    """Both standings after a rated match (winner: seat or None for a draw)."""
    ratings = rate_match(before[0].rating, before[1].rating, winner)
    return [
        Standing(
            s.played + 1,
            s.wins + (winner == seat),
            s.losses + (winner == 1 - seat),
            s.draws + (winner is None),
            ratings[seat],
        )
        for seat, s in enumerate(before)
    ]


# --- commands -------------------------------------------------------------------------------------
def _commands(w: _Writes, keys: Keys) -> list[Command]:
    out: list[Command] = []
    for (partition, match_id), results in w.matches.items():
        out.append(("HSET", keys.match(match_id, partition), *_flat(_fields(results).items())))
    for partition, match_id, seq, entry in w.log:
        out.append(("ZADD", keys.match_log(match_id, partition), seq, entry))
    for (key, match_id), score in w.placements.items():
        out.append(("ZREM", key, match_id) if score is None else ("ZADD", key, score, match_id))
    for key in sorted(w.trimmed):
        out.append(("ZREMRANGEBYRANK", key, 0, -RECENT_LIMIT - 1))
    for (partition, match_id), at_ms in w.deadlines.items():
        key = keys.deadlines(partition)
        out.append(("ZREM", key, match_id) if at_ms is None else ("ZADD", key, at_ms, match_id))
    for (key, name), increment in w.counters.items():
        out.append(("HINCRBY", key, name, increment))
    for (player, game), standing in w.standings.items():
        out.append(("HSET", keys.player(player), *_flat(zip(player_fields(game), standing.values(), strict=False))))
        out.append(("ZADD", keys.leaderboard(game, "rating"), repr(standing.rating.rating), player))
        out.append(("ZADD", keys.leaderboard(game, "wins"), standing.wins, player))
        out.append(("ZADD", keys.leaderboard(game, "played"), standing.played, player))
    for match_id, mark in w.outcomes.items():
        out.append(("SET", keys.match_outcome(match_id), mark))
    for key, n, entry in w.history:
        out.append(("ZADD", key, n, entry))
        out.append(("ZREMRANGEBYRANK", key, 0, -HISTORY_LIMIT - 1))
    for key, ended_ms, match_id in w.recent:
        out.append(("ZADD", key, ended_ms, match_id))
        out.append(("ZREMRANGEBYRANK", key, 0, -PLAYER_RECENT_LIMIT - 1))
    for channel, raw in w.announcements:
        out.append(("PUBLISH", channel, raw))
    return out


def _flat(pairs: Iterable[tuple[str, str]]) -> list[str]:
    return [x for pair in pairs for x in pair]
