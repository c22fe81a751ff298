"""The tournament service: folds `plylog.tournaments` with the pure decider (games.tournaments) and
does what the fold asks for (docs/tournaments.md, "The service").

- Every tournament's state is the fold of its records: the service reads the topic (one partition)
  from its beginning at every start, so a restart loses nothing and needs no state of its own.
- A pairing's match is created by an ordinary create on `plylog.moves`, with the pairing's
  deterministic event id and match id: writing it again after a restart is answered `duplicate` or
  `match_exists` by the rules worker, never with a second match. The seats are taken at once
  (`match_joined` for both, stamped with the pairing's time), so the match's clock decides an absent
  player.
- A pairing decided without its match being played out (a withdrawal, a forfeit) ends that match:
  an `adjudicate` record (games.tournaments.adjudicate_record, event id `<match id>:adjudicate`, the
  same bytes every time: after a restart the rules worker answers `duplicate`, never a second ending).
- Each tournament match's outcome on `plylog.outcomes` is fed back as a `match_ended` record (event
  id `<match id>:ended`, so a re-read outcome is `duplicate` or `already_decided`). The outcomes
  offset is kept in Redis only once the record is acknowledged: a crash re-reads, never skips.
- Time: when `wake_at` of a tournament has come, a `tick` record (start, forfeits, round ends,
  arena waves).
- Each tournament's view (tournament_store.view_of) goes to Redis and its live channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from pathlib import Path
from typing import Any

import orjson

from games.timeutil import from_ms
from games.tournaments import (
    Pairing,
    TournamentState,
    adjudicate_record,
    create_record,
    read,
    step,
    to_create,
    to_end,
    wake_at,
)
from schemas.tournament import DIRECTOR
from services.common import redis_client
from services.common.kafka_produce import Producer
from services.common.kafka_read import PartitionReader, Record
from services.common.settings import Settings
from services.common.tournament_store import RESULT_TTL_S, TournamentKeys, summary_of, view_of

log = logging.getLogger("plylog.tournaments")
TAKE_S = 0.1
RETICK_MS = 2000
#: After a restart, the matches of decided pairings are ended again (answered `duplicate`) in the
#: tournaments still running or ended this recently: a crash between deciding and ending loses none.
REEND_AFTER_END_MS = 24 * 3600 * 1000


class TournamentService:
    def __init__(self, settings: Settings, redis_prefix: str, ready_file: Path | None = None):
        self.settings, self.ready_file = settings, ready_file
        self.keys = TournamentKeys(redis_prefix)
        self.offsets_key = f"{redis_prefix}tournament-offsets"
        self.states: dict[str, TournamentState] = {}
        self.match_tournament: dict[str, str] = {}  # match id -> its tournament
        self.sent: set[str] = set()  # create and adjudicate event ids written by this process
        self.ticked: dict[str, tuple[int, int]] = {}  # tournament -> (wake time, when) of its last tick
        self.caught_up = False
        self.counts: dict[str, int] = {}

    async def run(self) -> None:
        s = self.settings
        topics = s.topics
        self.redis = redis_client.connect_async(s.redis, socket_connect_timeout=5)
        self.producer = await Producer.start(s.kafka_bootstrap, s.kafka_auth, linger_ms=1, retry_for_s=60)
        self.log_reader = PartitionReader(s.kafka_bootstrap, s.kafka_auth)
        self.outcome_reader = PartitionReader(s.kafka_bootstrap, s.kafka_auth)
        log_end = await asyncio.to_thread(self.log_reader.end, topics.tournaments, 0)
        await asyncio.to_thread(self.log_reader.start, topics.tournaments, 0, None)
        stored = await self.redis.hget(self.offsets_key, topics.outcomes)
        await asyncio.to_thread(self.outcome_reader.start, topics.outcomes, 0, int(stored) if stored else None)
        log.info("reading %s (%d records to catch up on)", topics.tournaments, log_end)
        stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stopping.set)
        position = 0
        try:
            while not stopping.is_set():
                records, position = await asyncio.to_thread(self.log_reader.take, 500, TAKE_S)
                for record in records:
                    await self._fold(record)
                if not self.caught_up and position >= log_end:
                    await self._caught_up()
                if self.caught_up:
                    await self._outcomes()
                    await self._ticks()
        finally:
            await self.producer.stop()
            self.log_reader.close()
            self.outcome_reader.close()
            await self.redis.aclose()

    async def _caught_up(self) -> None:
        self.caught_up = True
        now = int(time.time() * 1000)
        for state in self.states.values():
            await self._publish(state)
            await self._create_matches(state)
            if state.ended_ms is None or now - state.ended_ms < REEND_AFTER_END_MS:
                await self._end_matches(state, to_end(state))
        log.info("caught up: %d tournament(s), %d running", len(self.states), self._running())
        if self.ready_file is not None:
            self.ready_file.write_text("ready\n")

    def _running(self) -> int:
        return sum(1 for state in self.states.values() if state.status == "running")

    # --- the fold ---------------------------------------------------------------------------------
    async def _fold(self, record: Record) -> None:
        if record.value is None:
            return
        parsed = read(record.value, record.key)
        tid = getattr(parsed, "tournament_id", None)
        state = self.states.get(tid) if isinstance(tid, str) else None
        taken = step(state, parsed, {"partition": record.partition, "offset": record.offset})
        result = taken.result
        self.counts[result["status"]] = self.counts.get(result["status"], 0) + 1
        if result["status"] == "rejected" and result.get("actor") == DIRECTOR and self.caught_up:
            log.info("%s: %s refused: %s", tid, result.get("event_id"), result.get("reason"))
        if isinstance(tid, str) and result.get("event_id"):
            with contextlib.suppress(ValueError):
                await self.redis.set(self.keys.result(tid, result["event_id"]), orjson.dumps(result), ex=RESULT_TTL_S)
        if not taken.changed or taken.state is None:
            return
        state = taken.state
        self.states[state.tournament_id] = state
        for pairing in state.pairings[len(state.pairings) - _new_pairings(result) :]:
            self.match_tournament[pairing.match_id] = state.tournament_id
        if self.caught_up:
            await self._publish(state)
            await self._create_matches(state)
            decided = _decided_now(result)
            await self._end_matches(state, [p for p in to_end(state) if p.match_id in decided])

    async def _publish(self, state: TournamentState) -> None:
        view = view_of(state)
        raw = orjson.dumps(view)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(self.keys.view(state.tournament_id), raw)
            pipe.zadd(self.keys.index, {state.tournament_id: state.created_ms})
            pipe.hset(f"{self.keys.prefix}tournament-summaries", state.tournament_id, orjson.dumps(summary_of(view)))
            pipe.publish(self.keys.live(state.tournament_id), raw)
            await pipe.execute()

    # --- what the fold asks for ---------------------------------------------------------------------
    async def _create_matches(self, state: TournamentState) -> None:
        """Create the matches of pending pairings (once per process; again after a restart: harmless)."""
        for pairing in to_create(state):
            if pairing.event_id in self.sent:
                continue
            create = create_record(state, pairing)
            await self.producer.send(self.settings.topics.moves, orjson.dumps(create), key=pairing.match_id.encode())
            for joined in join_records(state.tournament_id, pairing):
                await self._send(joined)
            self.sent.add(pairing.event_id)
            self.counts["matches"] = self.counts.get("matches", 0) + 1
            log.info("%s: match %s for %s", state.tournament_id, pairing.match_id, " v ".join(pairing.seats))

    async def _end_matches(self, state: TournamentState, pairings: list[Pairing]) -> None:
        """End the matches of `pairings`, decided without being played out (`to_end`), once per
        process; again after a restart: `duplicate`. A pairing decided as it was paired never had a
        match: its record is refused `unknown_match`, which changes nothing."""
        for pairing in pairings:
            record = adjudicate_record(pairing)
            if record["event_id"] in self.sent:
                continue
            await self.producer.send(self.settings.topics.moves, orjson.dumps(record), key=pairing.match_id.encode())
            self.sent.add(record["event_id"])
            self.counts["ended"] = self.counts.get("ended", 0) + 1
            log.info("%s: match %s ended (%s)", state.tournament_id, pairing.match_id, record["action"]["reason"])

    async def _outcomes(self) -> None:
        records, position = await asyncio.to_thread(self.outcome_reader.take, 500, TAKE_S)
        for record in records:
            outcome = _json(record.value)
            match_id = outcome.get("match_id") if outcome else None
            tid = self.match_tournament.get(match_id) if isinstance(match_id, str) else None
            if outcome is None or tid is None or _decided(self.states.get(tid), str(match_id)):
                continue  # not a pairing's match, or its pairing decided already (e.g. ended by the service)
            ended = {
                "type": "match_ended",
                "match_id": match_id,
                "players": outcome.get("players"),
                "outcome": outcome.get("outcome"),
            }
            await self._write(tid, f"{match_id}:ended", ended)
        if records:  # written and acknowledged: never read again
            await self.redis.hset(self.offsets_key, self.settings.topics.outcomes, position)

    async def _ticks(self) -> None:
        now = int(time.time() * 1000)
        for tid, state in self.states.items():
            due = wake_at(state)
            last = self.ticked.get(tid)
            if due is None or due > now or (last is not None and last[0] == due and now - last[1] < RETICK_MS):
                continue  # not due, or ticked for this already (and the tick is on its way)
            self.ticked[tid] = (due, now)
            await self._write(tid, f"tick:{now}", {"type": "tick"}, now)

    async def _write(self, tid: str, event_id: str, action: dict[str, Any], now: int | None = None) -> None:
        """A record of the service's, stamped `now` (epoch ms), else the wall time."""
        await self._send(service_record(tid, event_id, action, now if now is not None else int(time.time() * 1000)))

    async def _send(self, record: dict[str, Any]) -> None:
        tid = record["tournament_id"]
        await self.producer.send(self.settings.topics.tournaments, orjson.dumps(record), key=tid.encode())


def service_record(tid: str, event_id: str, action: dict[str, Any], at_ms: int) -> dict[str, Any]:
    return {
        "v": 1,
        "event_id": event_id,
        "tournament_id": tid,
        "actor": DIRECTOR,
        "at": from_ms(at_ms),
        "action": action,
    }


def join_records(tid: str, pairing: Pairing) -> list[dict[str, Any]]:
    """The `match_joined` of each seat of a pairing whose match the service created (seats taken), stamped
    with the pairing's own time, not the wall time: a service that comes back after more than
    forfeit_wait_s would otherwise write joins the fold takes as late, and it would forfeit both players
    of the match just created. The same bytes every time, so a re-sent join is a `duplicate`."""
    return [
        service_record(
            tid,
            f"{pairing.match_id}:joined:{seat}",
            {"type": "match_joined", "match_id": pairing.match_id, "player": player},
            pairing.paired_ms,
        )
        for seat, player in enumerate(pairing.seats)
    ]


def _decided_now(result: dict[str, Any]) -> set[str]:
    return {e["match_id"] for e in result["events"] if e.get("type") == "pairing_decided"}


def _decided(state: TournamentState | None, match_id: str) -> bool:
    """The fold would refuse this match's outcome as `already_decided`: no need to write it."""
    pairing = state.pairing(match_id) if state is not None else None
    return pairing is not None and pairing.decided is not None


def _new_pairings(result: dict[str, Any]) -> int:
    return sum(len(e.get("pairings", ())) for e in result["events"] if e.get("type") == "round_paired")


def _json(value: bytes | None) -> dict[str, Any] | None:
    try:
        data = orjson.loads(value) if value else None
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
