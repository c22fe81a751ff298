"""The rules worker's batch logic, free of Faust and Kafka so it can be read and tested alone.

A batch of move records becomes: records to produce (results, outcomes, dead letters), match
states to store and the partitions' new positions. The pipeline (pipeline.py) produces first,
waits for Kafka's acknowledgement, and only then stores the states, then the positions
(docs/decisions/positions-in-table.md), so a crash can repeat a result but never lose one.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import orjson

from games.fold import FORGET_FINISHED_AFTER, Placement, Unreadable, encode, forgotten, match_of, read, step
from games.match import MatchState
from services.common.kafka_partition import partition_of

log = logging.getLogger("plylog.rules")


@dataclass(frozen=True)
class Incoming:
    key: bytes | None
    value: bytes | None
    partition: int
    offset: int
    topic: str
    generation: int = 0  # the consumer group's generation it was fetched in


@dataclass(frozen=True)
class Outgoing:
    kind: str  # "results" | "outcomes" | "deadletter"
    key: bytes | None
    value: bytes
    partition: int
    cause: Incoming | None = None  # the move record it answers (for a dead letter if Kafka refuses it)


@dataclass
class Batch:
    """What one batch of moves gives: records to send, then states to store."""

    sends: list[Outgoing] = field(default_factory=list)
    writes: dict[bytes, tuple[bytes, int]] = field(default_factory=dict)  # key -> (value, partition)
    counts: Counter = field(default_factory=Counter)
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)  # partition -> (first, last) answered
    rewind: dict[int, int] = field(default_factory=dict)  # partition -> offset to fetch from again

    def state_writes(self) -> dict[bytes, tuple[bytes, int]]:
        return {k: v for k, v in self.writes.items() if not k.startswith(POSITION_PREFIX)}

    def position_writes(self) -> dict[bytes, tuple[bytes, int]]:
        return {k: v for k, v in self.writes.items() if k.startswith(POSITION_PREFIX)}

    def positions(self) -> dict[int, int]:
        """partition -> the offset of the last record the batch answered (its new position)."""
        return {partition: int(value) for _, (value, partition) in self.position_writes().items()}

    def describe_offsets(self) -> str:
        return " ".join(f"{p}:{first}-{last}" for p, (first, last) in sorted(self.offsets.items()))


GAP_CONFIRMATIONS = 3
POSITION_PREFIX = b"\x00position:"


def position_key(partition: int) -> bytes:
    """Table key of a moves partition's position: the offset of the last record answered.
    The worker seeks there after every assignment, so Faust's own offset commits (which can
    run ahead of processing around a rebalance) never decide what is skipped."""
    return POSITION_PREFIX + b"%d" % partition


def read_position(stored: bytes | None) -> int:
    return -1 if stored is None else int(stored)


@dataclass
class Counters:
    """Running totals of the batches' counts, for metrics (`metrics.json`)."""

    totals: Counter = field(default_factory=Counter)
    batches: int = 0
    batch_seconds_total: float = 0.0
    batch_seconds_max: float = 0.0
    #: called with every batch's counts and duration (the Prometheus metrics, services/rules/ops.py)
    listeners: list[Callable[[Counter, float], None]] = field(default_factory=list)

    def add(self, batch: Batch, seconds: float) -> None:
        self.batches += 1
        self.totals.update(batch.counts)
        self.batch_seconds_total += seconds
        self.batch_seconds_max = max(self.batch_seconds_max, seconds)
        for listener in self.listeners:
            listener(batch.counts, seconds)

    def as_dict(self) -> dict:
        plain = (
            "records",
            "redelivered",
            "gaps",
            "accepted",
            "duplicates",
            "deadletters",
            "replaced",
            "states",
            "forgotten",
        )
        return {
            **{name: self.totals[name] for name in plain},
            "rejected": rejected_by_code(self.totals),
            "batches": self.batches,
            "batch_seconds_total": round(self.batch_seconds_total, 6),
            "batch_seconds_max": round(self.batch_seconds_max, 6),
        }


@dataclass
class BatchLines:
    """Which stored batches get a log line at INFO: the first few (a start is visible), any with
    redeliveries or dead letters, and one every `every_s`; the others at DEBUG. A line per batch
    cost ~2 % of the worker's CPU at 1,000 moves/s, where batches are small."""

    first: int = 10
    every_s: float = 5.0
    quiet: int = 0  # batches stored since the last INFO line without one
    _last: float = float("-inf")

    def notable(self, number: int, counts: Counter, now: float) -> bool:
        if number <= self.first or counts["redelivered"] or counts["deadletters"] or now - self._last >= self.every_s:
            self._last = now
            return True
        self.quiet += 1
        return False

    def since_last(self) -> int:
        """How many batches were left out since the last INFO line; the count starts again."""
        quiet, self.quiet = self.quiet, 0
        return quiet


def rejected_by_code(counts: Counter) -> dict[str, int]:
    return {name.split(":", 1)[1]: value for name, value in counts.items() if name.startswith("rejected:")}


class StateCache:
    """Decoded table entries, valid while the stored bytes are the very object they came from
    (a table restored after a rebalance holds new objects, so nothing stale is ever used)."""

    def __init__(self, capacity: int = 20_000):
        self.capacity = capacity
        self._entries: OrderedDict[bytes, tuple[bytes, Stored]] = OrderedDict()

    def get(self, key: bytes, stored: bytes | None) -> Stored | None:
        if stored is None:
            return None
        entry = self._entries.get(key)
        if entry is not None and entry[0] is stored:
            self._entries.move_to_end(key)
            return entry[1]
        data = orjson.loads(stored)
        decoded = Stored(MatchState.from_json(data["state"]), data["offset"])
        self.put(key, stored, decoded)
        return decoded

    def put(self, key: bytes, stored: bytes, decoded: Stored) -> None:
        self._entries[key] = (stored, decoded)
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


@dataclass(frozen=True)
class Stored:
    """A table entry: the match state and the moves offset of the last record applied to it.
    A redelivered record at or below that offset was answered before the state was stored."""

    state: MatchState
    offset: int
    partition: int = -1

    def encode(self) -> bytes:
        """`{"offset":N,"state":...}`; a finished match's entry says so and where it lives right
        after the offset (`"finished_in":P`), so the sweep finds it without decoding the state."""
        state = self.state.json_bytes()
        if self.state.status == "over" and self.partition >= 0:
            return b'{"offset":%d,"finished_in":%d,"state":%s}' % (self.offset, self.partition, state)
        return b'{"offset":%d,"state":%s}' % (self.offset, state)


_ENTRY_OFFSET = re.compile(rb'\{"offset":(-?\d+)')
_FINISHED_ENTRY = re.compile(rb'\{"offset":(-?\d+),"finished_in":(\d+),')


def stored_offset(value: bytes) -> int:
    """The moves offset a table value was written for: a match entry (`Stored.encode`, which
    starts with its offset) or a partition position (the offset itself)."""
    found = _ENTRY_OFFSET.match(value)
    return int(found.group(1)) if found else int(value)


def forgettable(entries: Iterable[tuple[bytes, bytes]], positions: dict[int, int]) -> list[tuple[bytes, int]]:
    """The (key, partition) of every finished match among `entries` (table keys and values) that the
    fold has forgotten (games.fold.FORGET_FINISHED_AFTER) by the stored `positions` of the
    partitions given: deleting them changes no answer, it frees the table and shortens recovery."""
    found = []
    for key, value in entries:
        finished = _FINISHED_ENTRY.match(value) if value else None
        if finished is None:
            continue
        partition = int(finished.group(2))
        if partition in positions and positions[partition] - int(finished.group(1)) > FORGET_FINISHED_AFTER:
            found.append((key, partition))
    return found


class RulesCore:
    """Folds batches of move records of a topic with `partitions` partitions; `load(key)` returns
    the stored state bytes or None."""

    def __init__(self, partitions: int, cache: StateCache | None = None):
        self.partitions = partitions
        self.cache = cache or StateCache()
        self.gaps: dict[int, tuple[int, int, int]] = {}  # partition -> (expected, delivered, times)

    def fold_batch(
        self,
        records: list[Incoming],
        load: Callable[[bytes], bytes | None],
        position: Callable[[int], int] | None = None,
    ) -> Batch:
        """Fold `records`: `load(match key)` gives a stored state, `position(partition)` the stored
        position (default: read through `load`, where the table keeps positions)."""
        if position is None:
            position = lambda partition: read_position(load(position_key(partition)))  # noqa: E731
        batch = Batch()
        latest: dict[bytes, Stored] = {}  # changed in this batch, not yet stored
        positions: dict[int, int] = {}  # stored position per partition, then the batch's progress
        advanced: set[int] = set()
        for incoming in records:
            batch.counts["records"] += 1
            partition = incoming.partition
            if partition not in positions:
                positions[partition] = position(partition)
            if not self._admit(incoming, positions[partition], batch):
                continue
            positions[partition] = incoming.offset
            advanced.add(partition)
            batch.offsets[partition] = (batch.offsets.get(partition, (incoming.offset,))[0], incoming.offset)
            try:
                self._fold_one(incoming, load, latest, batch)
            except Exception as error:  # a bug must not stop the partition: keep the record, go on
                log.exception("internal error on %s[%d]@%d", incoming.topic, incoming.partition, incoming.offset)
                batch.sends.append(dead_letter(incoming, f"internal error: {type(error).__name__}: {error}"))
                batch.counts["deadletters"] += 1
        batch.counts["states"] = len(latest)
        for key, entry in latest.items():
            stored = entry.encode()
            batch.writes[key] = (stored, entry.partition)
            self.cache.put(key, stored, entry)
        for partition in sorted(advanced):  # after the states: a crash between is covered per match
            batch.writes[position_key(partition)] = (b"%d" % positions[partition], partition)
        return batch

    def _admit(self, incoming: Incoming, position: int, batch: Batch) -> bool:
        """Whether to fold this record: the next one after the partition's position. A record at
        or below it was answered already. One beyond it means records were not delivered (Faust
        can drop records it fetched around a recovery): nothing more of the partition is folded
        in this batch and the worker fetches it again from just after the position. Only when
        fetching again gives the same record three times running is the gap real (offsets a
        transactional producer's markers take, records retention deleted) and accepted.

        A partition with no stored position expects offset 0 like any other: when Faust's first
        assignment of a partition with no committed offset dropped records it had fetched before
        the rebalance paused it (its flow-control clear), it does not seek back (there is nothing
        to seek to) and fetching goes on after them; admitting any first record then skipped
        hundreds of moves for good (a worker that took over a partition whose owner was paused
        before its first commit)."""
        partition, offset = incoming.partition, incoming.offset
        if offset <= position:
            batch.counts["redelivered"] += 1
            return False
        if partition in batch.rewind:
            return False
        if offset == position + 1:
            self.gaps.pop(partition, None)
            return True
        seen = self.gaps.get(partition)
        times = seen[2] + 1 if seen and seen[:2] == (position + 1, offset) else 1
        self.gaps[partition] = (position + 1, offset, times)
        batch.counts["gaps"] += 1
        if times >= GAP_CONFIRMATIONS:
            log.warning(
                "%s[%d]: offsets %d-%d hold no records (fetched %d times); going on at %d",
                incoming.topic,
                partition,
                position + 1,
                offset - 1,
                times,
                offset,
            )
            del self.gaps[partition]
            return True
        log.warning(
            "%s[%d]: offsets %d-%d were not delivered before %d; fetching them again",
            incoming.topic,
            partition,
            position + 1,
            offset - 1,
            offset,
        )
        batch.rewind[partition] = position + 1
        return False

    def _fold_one(
        self, incoming: Incoming, load: Callable[[bytes], bytes | None], latest: dict[bytes, Stored], batch: Batch
    ) -> None:
        if incoming.value is None:
            self._dead(batch, incoming, "record has no value (a tombstone)")
            return
        home = partition_of(incoming.key or b"", self.partitions)
        record = read(incoming.value, incoming.key or b"", Placement(incoming.topic, incoming.partition, home))
        if isinstance(record, Unreadable) and not record.has_ids:
            self._dead(batch, incoming, f"{record.code}: {record.message}")
            return
        assert record.match_id is not None  # a move, or unreadable with its ids
        match_key = record.match_id.encode()
        entry = None
        if match_of(record) is not None:  # else the record is not in its match's log: no state
            entry = latest.get(match_key) or self.cache.get(match_key, load(match_key))
            if entry is not None and incoming.offset <= entry.offset:
                batch.counts["redelivered"] += 1
                return
            if entry is not None and forgotten(entry.state, entry.offset, incoming.offset):
                entry = None  # the sweep deletes it, or has: either way the match is gone
        source = {"partition": incoming.partition, "offset": incoming.offset}
        taken = step(entry.state if entry else None, record, source)
        result = taken.result
        batch.sends.append(Outgoing("results", match_key, encode(result), incoming.partition, incoming))
        if taken.outcome is not None:
            batch.sends.append(Outgoing("outcomes", match_key, encode(taken.outcome), 0, incoming))
        if taken.changed and taken.state is not None:
            latest[match_key] = Stored(taken.state, incoming.offset, incoming.partition)
        if result["status"] == "accepted":
            batch.counts["duplicates" if result["duplicate"] else "accepted"] += 1
        else:
            batch.counts[f"rejected:{result['reason']['code']}"] += 1
        if log.isEnabledFor(logging.DEBUG):  # the call alone, per record, was ~2 % of the worker's CPU
            log.debug(
                "%s[%d]@%d %s %s seq=%s",
                incoming.topic,
                incoming.partition,
                incoming.offset,
                result["match_id"],
                result["status"],
                result["seq"],
            )

    @staticmethod
    def _dead(batch: Batch, incoming: Incoming, error: str) -> None:
        batch.sends.append(dead_letter(incoming, error))
        batch.counts["deadletters"] += 1


#: Raw bytes a dead letter keeps of its record: a dead letter always fits a Kafka record (1 MB by
#: default) whatever arrived; the whole record's size and SHA-256 stay to identify it.
DEAD_LETTER_RAW_BYTES = 64 * 1024
DEAD_LETTER_ERROR_CHARS = 2000


def dead_letter(incoming: Incoming, error: str, keep_raw: int = DEAD_LETTER_RAW_BYTES) -> Outgoing:
    """The dead letter of `incoming`, keyed by its key as received; a key over DEAD_LETTER_RAW_BYTES
    (Kafka lets a key be as large as a record) is cut to that, the letter giving its size and
    SHA-256: whole, it made the letter too large for the producer, which stopped the worker."""
    raw, key = incoming.value or b"", incoming.key
    letter = {
        "v": 1,
        "error": error[:DEAD_LETTER_ERROR_CHARS],
        "raw_b64": base64.b64encode(raw[:keep_raw]).decode(),
        "raw_size": len(raw),
        "raw_sha256": hashlib.sha256(raw).hexdigest(),
        "raw_truncated": len(raw) > keep_raw,
        "topic": incoming.topic,
        "partition": incoming.partition,
        "offset": incoming.offset,
    }
    if key is not None and len(key) > DEAD_LETTER_RAW_BYTES:
        letter.update(key_size=len(key), key_sha256=hashlib.sha256(key).hexdigest(), key_truncated=True)
        key = key[:DEAD_LETTER_RAW_BYTES]
    return Outgoing("deadletter", key, orjson.dumps(letter), incoming.partition, incoming)
