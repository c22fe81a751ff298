"""The tournaments' part of `plylog audit --all`: refold `plylog.tournaments` and check it against
the matches it asked for (docs/tournaments.md, "The service")."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

import orjson

from games.tournaments import replay
from games.tournaments.matches import must_end
from schemas.tournament import DIRECTOR
from services.common.kafka_read import Record, read_topic
from services.common.settings import Settings


def audit_tournaments(
    settings: Settings, results: list[bytes], outcomes: dict[str, set[bytes]], problem: Callable[[str], None]
) -> int:
    """Every pairing's match created once, by the tournament service, with the pairing's seats and
    the rules version the tournament's create stated (none, when it stated none); every
    played pairing decided as its match's outcome; every match of a pairing decided without it ended,
    unless it was under way (then it is played out). Returns the number of tournaments checked."""
    try:
        records = read_topic(settings.kafka_bootstrap, settings.topics.tournaments, auth=settings.kafka_auth)
    except LookupError:
        return 0  # no tournaments topic: nothing to check
    return check_tournaments(records, results, outcomes, problem)


def check_tournaments(
    records: list[Record], results: list[bytes], outcomes: dict[str, set[bytes]], problem: Callable[[str], None]
) -> int:
    """`audit_tournaments` on the records of `plylog.tournaments` given."""
    created: Counter[str] = Counter()
    creators: dict[str, tuple[str, list, str | None]] = {}
    played_out: set[str] = set()  # matches under way when their pairing was decided: they are played out
    for raw in results:
        result = orjson.loads(raw)
        if _refused_as_under_way(result):
            played_out.add(result["match_id"])
        if result.get("status") != "accepted" or result.get("duplicate"):
            continue
        for event in result.get("events") or ():
            if event.get("type") == "match_created":
                created[result["match_id"]] += 1
                creators[result["match_id"]] = (result.get("player"), event.get("seats"), event.get("rules"))
    by_tournament: dict[bytes, list[Record]] = defaultdict(list)
    for record in records:
        if record.key is not None and record.value is not None:
            by_tournament[record.key].append(record)
    for key, mine in by_tournament.items():
        state, _ = replay([r.value for r in mine if r.value is not None])
        if state is None:
            continue
        for pairing in state.pairings:
            match_id, where = pairing.match_id, f"tournament {key.decode(errors='replace')}"
            if created[match_id] > 1:
                problem(f"{where}: match {match_id} was created {created[match_id]} times")
            if match_id in creators and creators[match_id] != (DIRECTOR, list(pairing.seats), state.settings.rules):
                problem(f"{where}: match {match_id} was created as {creators[match_id]}, not by the pairing")
            ended = outcomes.get(match_id) or match_id in played_out
            if must_end(pairing) and created[match_id] and not ended:
                problem(f"{where}: match {match_id} still runs after its pairing was decided without it")
            for raw in outcomes.get(match_id, ()):
                winner = orjson.loads(raw)["outcome"]["winner"]
                decided = pairing.decided
                if decided is None and state.status != "over":
                    problem(f"{where}: the outcome of {match_id} was not fed back")
                elif decided is not None and decided.how == "played" and decided.winner != winner:
                    problem(f"{where}: {match_id} decided with winner {decided.winner}, its outcome says {winner}")
    return len(by_tournament)


def _refused_as_under_way(result: dict) -> bool:
    """The service's `adjudicate` of a match refused `illegal`: the match was under way (its first move
    made), so it is played out, rated, rather than ended (docs/tournaments.md, "Players who leave")."""
    match_id = result.get("match_id")
    reason = result.get("reason") or {}
    return (
        result.get("status") == "rejected"
        and result.get("player") == DIRECTOR
        and result.get("event_id") == f"{match_id}:adjudicate"
        and reason.get("code") == "illegal"
    )
