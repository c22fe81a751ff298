"""The bot service's loop: consume `plylog.results` as the group `<topic prefix>bots` (instances
share the partitions), keep the public position of every match a bot plays, and produce its
bots' moves to `plylog.moves` (acks=all), both through services/common's Kafka layer. See
players.py for the decisions and thinking.py for how the service shares its time between players.

Each turn a bot owes is a task of its own: many matches are thought about at once, and one slow
decision holds up no other match. A newer result of a match replaces a turn not yet being decided
(the service acts on the newest result it has read), and a turn is dropped when the projection is
already past it (a service catching up on old results does not think about turns long gone).
Offsets are committed up to the oldest result whose move is still owed (progress.py): a crash
re-reads those and decides again under the same event ids (`duplicate`, never a second move).
A position it does not hold (after a restart or a rebalance) is rebuilt from the projection's
public log in Redis, once the projector has the seq before the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import signal
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from games.public import PublicPosition
from schemas.base import is_match_id
from services.common import bot_directory, redis_client
from services.common.kafka_group import GroupMember
from services.common.kafka_produce import Producer
from services.common.projection import Projection
from services.common.redis_keys import Keys
from services.common.settings import Settings

from .players import Turn, lane, our_rejected_move
from .progress import Progress
from .thinking import Thinker

log = logging.getLogger("plylog.bots")
ANNOUNCE_EVERY_S = 5.0
PROJECTION_WAIT_S = 30.0
RETRY_MAX_S = 5.0
MAX_OWED_TURNS = 2000  # turns in hand at once; past it, the service reads no more results until some are done


@dataclass(eq=False)
class _Owed:
    """The turns of one result a bot owes a move for."""

    partition: int
    offset: int
    result: dict[str, Any]
    turns: list[Turn]
    retry: bool
    position: PublicPosition | None  # the public match at the result's seq, when held
    task: asyncio.Task | None = None

    @property
    def seq(self) -> int:
        return self.result["view"]["seq"]


class _Positions:
    """Public positions of the matches on the partitions this instance holds."""

    def __init__(self, on_assigned, on_revoked):
        self.by_match: dict[str, tuple[int, PublicPosition]] = {}  # match -> (partition, position)
        self._on_assigned, self._on_revoked = on_assigned, on_revoked

    async def revoked(self, gone: set[int]) -> None:
        await self._on_revoked(gone)
        self.by_match = {m: v for m, v in self.by_match.items() if v[0] not in gone}

    def assigned(self, partitions: set[int]) -> None:
        log.info("assigned partitions: %s", sorted(partitions))
        if partitions:
            self._on_assigned()


class BotService:
    def __init__(self, settings: Settings, keys: Keys, thinker: Thinker, instance: str, ready_file: Path | None = None):
        self.settings, self.keys, self.thinker, self.instance = settings, keys, thinker, instance
        self.players = thinker.players
        self.ready_file = ready_file
        self.counts: Counter = Counter()
        self.progress = Progress()
        self.owed: dict[str, _Owed] = {}  # match -> the turns owed in it (of its newest seq)
        self.working: set[_Owed] = set()  # every owed turn still in hand (a replaced one may be finishing)

    async def run(self) -> None:
        topics = self.settings.topics
        self.redis = redis_client.connect_async(self.settings.redis, socket_connect_timeout=5)
        self.projection = Projection(self.redis, self.keys)
        self.positions = _Positions(self._mark_ready, self._give_up)
        self.consumer = consumer = GroupMember(
            self.settings.kafka_bootstrap,
            self.settings.kafka_auth,
            topics.results,
            topics.bots_group,
            self.instance,
            self.positions.assigned,
            self.positions.revoked,
        )
        await self.thinker.start()
        self.producer = await Producer.start(self.settings.kafka_bootstrap, self.settings.kafka_auth, linger_ms=1)
        await consumer.start()
        announcer = asyncio.create_task(self._announce())
        log.info("bot service %s plays %s", self.instance, ", ".join(sorted(self.players.bots)))
        stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stopping.set)
        try:
            while not stopping.is_set():
                if len(self.working) >= MAX_OWED_TURNS:  # enough in hand: read on once some are done
                    await asyncio.sleep(0.05)
                    continue
                for record in await consumer.take(500, 0.2):
                    self._take(record.partition, record.offset, record.value)
                await self._commit()
            log.info("stopping: %d turn(s) in hand are decided again by whoever reads on", len(self.working))
        finally:
            announcer.cancel()
            in_hand = list(self.working)
            for owed in in_hand:
                owed.task.cancel()
            await asyncio.gather(*(o.task for o in in_hand), return_exceptions=True)
            with contextlib.suppress(Exception):  # what is done need not be decided again
                await self._commit()
            await consumer.stop()
            await self.producer.stop()
            await self.redis.aclose()
            self.thinker.close()

    def _mark_ready(self) -> None:
        if self.ready_file is not None and not self.ready_file.exists():
            self.ready_file.write_text("ready\n")

    async def _announce(self) -> None:
        bots = {
            player[4:]: (tuple(sorted(bot.games)), getattr(bot, "description", bot.id))
            for player, bot in self.players.bots.items()
        }
        said: dict = {}
        while True:
            try:
                await bot_directory.announce(self.redis, self.keys, self.instance, bots)
            except Exception as error:  # noqa: BLE001 - Redis away for a moment: say so, try again
                log.warning("could not announce the bots: %s", error)
            if self.counts != said:
                said = dict(self.counts)
                log.info(
                    "totals %s; %d turn(s) in hand, %d waiting to think",
                    said,
                    len(self.working),
                    self.thinker.gate.waiting,
                )
            await asyncio.sleep(ANNOUNCE_EVERY_S)

    async def _commit(self, partitions: set[int] | None = None) -> None:
        points = self.progress.to_commit(partitions)
        if points:
            await self.consumer.commit(points)
            self.progress.committed(points)

    async def _give_up(self, partitions: set[int]) -> None:
        """Partitions revoked: stop thinking for their matches, commit what is done, forget them."""
        gone = [o for o in self.working if o.partition in partitions]
        for owed in gone:
            owed.task.cancel()
        await asyncio.gather(*(o.task for o in gone), return_exceptions=True)
        with contextlib.suppress(Exception):  # a lost commit only means deciding again: `duplicate`
            await self._commit(partitions)
        self.progress.forget(partitions)
        self.owed = {m: o for m, o in self.owed.items() if o.partition not in partitions}

    def _take(self, partition: int, offset: int, value: bytes | None) -> None:
        """One record of plylog.results: follow the match, and owe its turns if a bot of ours is to move."""
        self.progress.read(partition, offset)
        result = self._ours(value)
        if result is None:
            return
        self._follow(partition, result)
        match_id, view = result["match_id"], result["view"]
        retry = our_rejected_move(result, self.players)
        current = self.owed.get(match_id)
        if current is not None:
            if view["seq"] <= current.seq and not retry:
                log.debug(
                    "%s: seq %d (%s) leaves the turn owed at seq %d",
                    match_id,
                    view["seq"],
                    result["status"],
                    current.seq,
                )
                return  # another's refused action, at the seq our turn is owed at: that turn stands
            log.debug(
                "%s: seq %d (%s) replaces the turn owed at seq %d", match_id, view["seq"], result["status"], current.seq
            )
            current.task.cancel()  # the match has moved on (or our move was refused): that turn is gone
            del self.owed[match_id]
        turns = self.players.turns(view)
        if not turns or not (result["status"] == "accepted" or retry):
            return
        held = self.positions.by_match.get(match_id)
        position = None
        if held is not None and held[1].seq == view["seq"]:
            position = PublicPosition(state=held[1].state, seq=held[1].seq)  # states are immutable
        owed = _Owed(partition, offset, result, turns, retry, position)
        log.debug(
            "%s: owes %s at seq %d (offset %d:%d)", match_id, [t.player for t in turns], view["seq"], partition, offset
        )
        self.progress.owe(partition, offset)
        owed.task = asyncio.create_task(self._play(owed))
        self.owed[match_id] = owed
        self.working.add(owed)

    def _ours(self, value: bytes | None) -> dict[str, Any] | None:
        """The result, if it is of a match one of our bots plays."""
        try:
            result = orjson.loads(value) if value else None
        except orjson.JSONDecodeError:
            return None
        view = result.get("view") if isinstance(result, dict) else None
        if (
            not isinstance(view, dict)
            or not is_match_id(result.get("match_id"))  # a record nobody here wrote: no key is named after it
            or view.get("match_id") != result["match_id"]
            or not self.players.plays_in(view)
        ):
            return None
        return result

    def _follow(self, partition: int, result: dict[str, Any]) -> None:
        """Keep the match's position up to date with an accepted result (when it follows on)."""
        if result["status"] != "accepted" or result.get("duplicate"):
            return
        held = self.positions.by_match.get(result["match_id"])
        if held is not None and held[1].seq == result["seq"] - 1:
            held[1].apply(result)
        elif held is not None and held[1].seq < result["seq"]:
            del self.positions.by_match[result["match_id"]]  # a gap: rebuilt when needed
        if result["view"]["status"] == "over":
            self.positions.by_match.pop(result["match_id"], None)

    async def _play(self, owed: _Owed) -> None:
        """Decide the owed turns and send their moves (acknowledged), then mark the result paid. Redis
        or Kafka away: tried again (the same event ids, so a move that did go out is `duplicate`)."""
        try:
            for attempt in itertools.count():
                try:
                    await self._play_once(owed)
                    return
                except Exception as error:
                    self.counts["failed"] += 1
                    if attempt == 0:
                        log.exception(
                            "%s: could not play the turn at seq %d; trying again", owed.result["match_id"], owed.seq
                        )
                    else:
                        log.warning(
                            "%s: still cannot play the turn at seq %d: %s", owed.result["match_id"], owed.seq, error
                        )
                    await asyncio.sleep(min(RETRY_MAX_S, 0.5 * 2**attempt))
        finally:
            self.progress.paid(owed.partition, owed.offset)
            self.working.discard(owed)
            if self.owed.get(owed.result["match_id"]) is owed:
                del self.owed[owed.result["match_id"]]

    async def _play_once(self, owed: _Owed) -> None:
        view = owed.result["view"]
        if await self._overtaken(view):
            self.counts["overtaken"] += 1
            return
        position = owed.position or await self._position(owed.partition, view)
        if position is None:
            return
        for turn in owed.turns:
            record = await self._decide(lane(view), turn, position, view, owed.retry)
            await self.producer.send(self.settings.topics.moves, orjson.dumps(record), key=turn.match_id.encode())
            self.counts["retries" if record["event_id"].endswith(":retry") else "moves"] += 1
            log.debug("%s: sent %s", turn.match_id, record["event_id"])

    async def _decide(
        self, lane_of: str, turn: Turn, position: PublicPosition, view: dict[str, Any], retry: bool
    ) -> dict[str, Any]:
        """A bot's move; a bot that fails (a bug) is replaced by a random legal move, so the match goes on."""
        try:
            return await self.thinker.move(lane_of, turn, position, view, retry)
        except asyncio.CancelledError:
            raise
        except Exception:
            if retry:
                raise
            log.exception(
                "%s: %s failed to decide at seq %d; a random legal move instead", turn.match_id, turn.player, turn.seq
            )
            self.counts["bot_errors"] += 1
            return await self.thinker.move(lane_of, turn, position, view, retry=True)

    async def _overtaken(self, view: dict[str, Any]) -> bool:
        stored = await self.projection.match_fields(view["match_id"], "seq")
        return stored is not None and (stored.get("seq") or 0) > view["seq"]

    async def _position(self, partition: int, view: dict[str, Any]) -> PublicPosition | None:
        match_id, seq = view["match_id"], view["seq"]
        held = self.positions.by_match.get(match_id)
        if held is not None and held[1].seq == seq:
            return held[1]
        deadline = time.monotonic() + PROJECTION_WAIT_S
        while True:
            entries = [e for e in await self.projection.log_since(match_id, 0) if e["seq"] <= seq]
            if len(entries) == seq:
                position = PublicPosition.from_log(entries)
                self.positions.by_match[match_id] = (partition, position)
                return position
            if time.monotonic() > deadline:
                log.error(
                    "%s: the projection has %d of the %d results before this turn after %.0f s; "
                    "is the projector running? The turn waits for the next result",
                    match_id,
                    len(entries),
                    seq,
                    PROJECTION_WAIT_S,
                )
                self.counts["waited_out"] += 1
                return None
            await asyncio.sleep(0.1)
