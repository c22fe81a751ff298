"""A projection of results and outcomes into Redis: the partitions a projector owns, at which stored
offsets, and `apply(poll)`: plan each partition's records and write them with their offsets,
fenced (docs/decisions/projector-script.md). The loops that feed it are in runner.py."""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

import redis

from services.common.settings import Topics

from .consumer import Positions, TopicPartition
from .plan import Consumed, Item, Needs, decode, disagreement, needs, plan
from .seqs import KnownSeqs
from .store import Advances, Conflict, Store, offset_field

log = logging.getLogger("plylog.projector")


def _tp_of(field: str) -> TopicPartition:
    topic, _, partition = field.rpartition(":")
    return TopicPartition(topic, int(partition))


@dataclass
class Totals:
    records: int = 0
    batches: int = 0
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)

    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        return {
            "records": self.records,
            "batches": self.batches,
            "batch_seconds_total": round(self.seconds, 6),
            **{name: self.counts[name] for name in sorted(self.counts)},
        }


class Projection:
    """Applies batches for the partitions this worker owns, fenced by the stored offsets.

    An outcome is applied only when it agrees with the match the projection saw finish (`confirm`).
    The outcome and its match's final result are on different topics, read at different paces
    (maybe by different projectors), so an outcome can come before its result is projected; it
    then waits, with every outcome after it (ratings are folded in the topic's order): the
    outcomes partition is `held` at it, and the runner reads it again a moment later. It waits
    until the match's home results partition is projected up to its `results_end` as it was when
    the outcome was first seen: the rules worker produces an outcome only once its result is
    acknowledged, so a true outcome's result is before that offset. If the match has not finished
    by then, or finished otherwise, the outcome is refused (counted, one log line). A rebuild
    decides the same: its horizon (the end it rebuilds to) is at or after the live one, and a
    finished match never changes (docs/security/kafka.md, "Defence in depth")."""

    def __init__(self, store: Store, topics: Topics, publish: bool = True):
        self.store = store
        self.topics = topics
        self.publish = publish
        self.positions: Positions = {}  # next offset as stored (None: none stored)
        self.seqs = KnownSeqs()  # of the partitions owned, what the last batches wrote
        self.totals = Totals()
        #: results partition -> its end offset now (the runner's consumer, or the end of a rebuild)
        self.results_end: Callable[[int], int] | None = None
        self.horizons: dict[int, int] = {}  # outcome offset -> results end when it was first seen
        self.held: TopicPartition | None = None  # the outcomes partition, when the last apply held it
        #: called with every applied poll's counts and duration (the Prometheus metrics, ops.py)
        self.listeners: list[Callable[[Counter, float], None]] = []

    def own(self, partitions: Iterable[TopicPartition]) -> Positions:
        """Take partitions over at their stored offsets; returns them (the caller seeks)."""
        partitions = list(partitions)
        self._forget_seqs(partitions)
        stored = self.store.stored_offsets([offset_field(tp.topic, tp.partition) for tp in partitions])
        for tp in partitions:
            self.positions[tp] = stored[offset_field(tp.topic, tp.partition)]
        return {tp: self.positions[tp] for tp in partitions}

    def disown(self, partitions: Iterable[TopicPartition]) -> None:
        partitions = list(partitions)
        self._forget_seqs(partitions)
        for tp in partitions:
            self.positions.pop(tp, None)

    def _forget_seqs(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            if tp.topic == self.topics.results:
                self.seqs.forget(tp.partition)
            else:
                self.horizons.clear()

    def confirm(self, items: list[Item]) -> tuple[dict[int, str], int | None]:
        """(outcome offset -> why it is refused, for those decided; the index of the first outcome
        that cannot be decided yet, or None). See the class's docstring for the rule."""
        outcomes: list[tuple[int, int, dict]] = [
            (i, item.consumed.offset, item.data)
            for i, item in enumerate(items)
            if item.kind == "outcome" and item.data is not None  # an outcome item always has its data
        ]
        keys = self.store.keys
        wanted = [(data["match_id"], keys.home(data["match_id"])) for _, _, data in outcomes]
        refusals: dict[int, str] = {}
        for (index, offset, data), (stored, fields), (_, partition) in zip(
            outcomes, self.store.finished(wanted, self.topics.results), wanted, strict=True
        ):
            why = disagreement(data, fields)
            if not why or fields[0] in (b"over", "over"):
                refusals[offset] = why  # finished: its fields are final
                continue
            horizon = self.horizons.get(offset)
            if horizon is None:
                try:
                    horizon = self.horizons[offset] = self.results_end(partition) if self.results_end else 0
                except Exception as error:  # noqa: BLE001 - no end known now: wait, ask again later
                    log.info(
                        "no end offset of %s[%d] yet (%s); the outcomes wait", self.topics.results, partition, error
                    )
                    return refusals, index
            if (stored or 0) < horizon:
                return refusals, index  # its result may not be projected yet: wait for it
            refusals[offset] = f"{why} after {self.topics.results}[{partition}] was projected to offset {horizon}"
        return refusals, None

    def apply(self, polled: dict[TopicPartition, list]) -> Conflict | None:
        """Apply one poll's records (per partition in offset order), one script per partition. None
        when done, or the Conflict when a partition's stored offset was not ours (nothing of that
        partition written; the other partitions may stay applied: re-own and seek)."""
        started = time.perf_counter()
        counts: Counter[str] = Counter()
        commands = applied = 0
        self.held = None
        fresh = self._fresh(polled)
        results = [records for records in fresh if records[0].topic != self.topics.outcomes]
        # the results first, so that an outcome in the same poll as its match's final result finds
        # it projected and is not held; the results partitions together, in one round trip
        steps = [functools.partial(self._apply_together, results)] if results else []
        steps += [functools.partial(self._apply_records, r) for r in fresh if r[0].topic == self.topics.outcomes]
        for step in steps:
            planned, ran, conflict = step()
            if conflict is not None:
                return conflict
            taken = planned["result"] + planned["outcome"] + planned["unreadable"]  # fewer when held
            counts, commands, applied = counts + planned, commands + ran, applied + taken
        if applied:
            self._count(applied, counts, commands, time.perf_counter() - started)
        return None

    def _fresh(self, polled: dict[TopicPartition, list]) -> list[list[Consumed]]:
        """Per owned partition (in order), the polled records at or after its stored offset."""
        batches = []
        for tp, messages in sorted(polled.items()):
            if tp not in self.positions:
                continue  # revoked since it was fetched
            expected = self.positions[tp]
            fresh = [m for m in messages if expected is None or m.offset >= expected]
            if fresh and expected is not None and fresh[0].offset > expected:
                log.warning(
                    "%s[%d]: next record at offset %d, expected %d (records missing from the topic?)",
                    tp.topic,
                    tp.partition,
                    fresh[0].offset,
                    expected,
                )
            if fresh:
                batches.append([Consumed(tp.topic, tp.partition, m.offset, m.value) for m in fresh])
        return batches

    def _apply_together(self, partitions: list[list[Consumed]]) -> tuple[Counter, int, Conflict | None]:
        """`_apply_records` of a poll's results partitions in two round trips whatever their number:
        one read of what is not known here, then every partition's script (each fenced by its own
        offsets, in its own slot). A partition whose script Redis refused is applied again on its
        own (halved down to the record that fails); a conflict leaves the others applied."""
        items = [decode(records, self.topics.outcomes) for records in partitions]
        wanted = [needs(its) for its in items]
        cached, unknown = self.seqs.split(frozenset().union(*(w.matches for w in wanted)))
        known = self.store.read_known(Needs(unknown, frozenset(), frozenset()))  # results need no more
        known.seqs.update(cached)
        plans = [plan(its, known, self.store.keys, self.publish) for its in items]
        advances = [self._advances(records) for records in partitions]
        answers = self.store.apply_many([(p.commands, a) for p, a in zip(plans, advances, strict=True)])
        counts: Counter[str] = Counter()
        ran, first_conflict = 0, None
        for records, planned, asked, advance, answer in zip(partitions, plans, wanted, advances, answers, strict=True):
            if isinstance(answer, redis.RedisError):  # NOSCRIPT (a restarted Redis), refused data
                self._forget_seqs([TopicPartition(records[0].topic, records[0].partition)])
                done, commands, conflict = self._apply_records(records)
            elif answer is None:
                self._landed(advance, asked.matches, known.seqs)
                done, commands, conflict = planned.counts, len(planned.commands), None
            else:
                done, commands, conflict = Counter(), 0, answer
            counts, ran = counts + done, ran + commands
            first_conflict = first_conflict or conflict
        return counts, ran, first_conflict

    def _landed(self, advances: Advances, matches: frozenset, seqs: dict[str, int]) -> None:
        """A partition's script ran: its offsets advanced and its matches' seqs are what Redis holds."""
        for name, (_, new) in advances.items():
            self.positions[_tp_of(name)] = new
        self.seqs.remember(matches, seqs)

    def _apply_records(self, records: list[Consumed]) -> tuple[Counter, int, Conflict | None]:
        """Plan and apply `records` with their offsets: (counts, commands run, conflict or None).
        If Redis refuses the script's data (it validates nothing of ours; planning should have
        caught it), the records are applied in halves, down to the one that fails, which is
        skipped (its offset is stored, nothing else) and counted: one bad record never wedges."""
        items = decode(records, self.topics.outcomes)
        refusals: dict[int, str] = {}
        if records[0].topic == self.topics.outcomes:
            refusals, held_at = self.confirm(items)
            if held_at is not None:
                self.held = TopicPartition(records[0].topic, records[0].partition)
                records, items = records[:held_at], items[:held_at]
                if not records:
                    return Counter(), 0, None
        wanted = needs(items)
        cached, unknown = self.seqs.split(wanted.matches)
        known = self.store.read_known(replace(wanted, matches=unknown))
        known.seqs.update(cached)
        batch = plan(items, known, self.store.keys, self.publish, refusals)
        advances = self._advances(records)
        written = True
        try:
            conflict = self.store.apply(batch.commands, advances)
        except (redis.DataError, redis.ResponseError) as error:
            failed = records[0]  # a script that failed half-way may have written some seqs
            self._forget_seqs([TopicPartition(failed.topic, failed.partition)])
            if len(records) > 1:
                middle = len(records) // 2
                first = self._apply_records(records[:middle])
                if first[2] is not None:
                    return first
                second = self._apply_records(records[middle:])
                return first[0] + second[0], first[1] + second[1], second[2]
            c = records[0]
            log.warning(
                "skipping %s[%d]@%d: Redis refused what it gives (%s: %s)",
                c.topic,
                c.partition,
                c.offset,
                type(error).__name__,
                error,
            )
            batch.counts = Counter({"skipped": 1})
            conflict = self.store.apply([], advances)
            written = False
        if conflict is None:
            self._landed(advances, wanted.matches if written else frozenset(), known.seqs)
        return batch.counts, len(batch.commands), conflict

    def _advances(self, records: list[Consumed]) -> Advances:
        """field -> (stored next offset expected, next offset after `records`), per partition."""
        advances: Advances = {}
        for c in records:
            name = offset_field(c.topic, c.partition)
            expected = advances[name][0] if name in advances else self.positions[TopicPartition(c.topic, c.partition)]
            advances[name] = (expected, c.offset + 1)
        return advances

    def _count(self, records: int, counts: Counter, commands: int, took: float) -> None:
        t = self.totals
        t.records += records
        t.batches += 1
        t.seconds += took
        t.counts.update(counts)
        for listener in self.listeners:
            listener(counts, took)
        log.info(
            "batch %d: %d results (%d applied, %d stale, %d duplicates, %d rejected), %d outcomes "
            "(%d rated, %d unrated, %d repeated, %d refused), %d unreadable, %d skipped -> %d commands in %.1f ms",
            t.batches,
            counts["result"],
            counts["applied"],
            counts["stale"],
            counts["duplicates"],
            counts["rejected"],
            counts["outcome"],
            counts["rated"],
            counts["unrated"],
            counts["outcomes_repeated"],
            counts["outcomes_refused"],
            counts["unreadable"],
            counts["skipped"],
            commands,
            took * 1000,
        )
