"""Read plylog's topics back from Kafka: refold a match from `plylog.moves`, and audit what the
rules worker emitted against an offline refold of the whole log."""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterator, Optional

import orjson
from kafka import KafkaConsumer, TopicPartition
from kafka.partitioner.default import murmur2

from games.fold import Replayer, Step, encode
from services.common.settings import Settings, load

log = logging.getLogger("plylog.audit")


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]


def read_topic(bootstrap: str, topic: str, partitions: Optional[list[int]] = None,
               timeout_s: float = 30.0) -> list[Record]:
    """Every record now in `topic` (or in some of its partitions), in offset order per partition."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             consumer_timeout_ms=int(timeout_s * 1000), fetch_max_bytes=32 * 1024 * 1024)
    try:
        available = consumer.partitions_for_topic(topic)
        if available is None:
            raise LookupError(f"topic {topic!r} does not exist on {bootstrap}")
        assigned = [TopicPartition(topic, p) for p in sorted(available) if partitions is None or p in partitions]
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        ends = consumer.end_offsets(assigned)
        remaining = {tp for tp in assigned if ends[tp] > 0}
        records: list[Record] = []
        while remaining:
            batch = consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=5000)
            if not batch:
                raise TimeoutError(f"reading {topic}: no data for {timeout_s}s with {len(remaining)} partitions unfinished")
            for tp, messages in batch.items():
                records.extend(Record(tp.partition, m.offset, m.key, m.value) for m in messages)
                if messages and messages[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)
        records.sort(key=lambda r: (r.partition, r.offset))
        return records
    finally:
        consumer.close()


def partition_of(key: bytes, partitions: int) -> int:
    """Kafka's default partition for a key (murmur2, as the Java and Python clients compute it)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def refold(records: list[Record], match_id: Optional[str] = None) -> Iterator[tuple[Record, Step]]:
    """Fold move records exactly as the rules worker does, one Replayer per partition."""
    replayers: dict[int, Replayer] = defaultdict(Replayer)
    for rec in records:
        if match_id is not None and rec.key != match_id.encode():
            continue
        if rec.value is None:
            yield rec, None  # a tombstone: the worker dead-letters it
            continue
        taken = replayers[rec.partition].feed(rec.value, {"partition": rec.partition, "offset": rec.offset},
                                              key=rec.key or b"")
        yield rec, taken


def fold_match_from_topic(match_id: str, settings: Optional[Settings] = None) -> Iterator[Step]:
    """The steps of one match, refolded from its partition of the moves topic."""
    settings = settings or load()
    topic = settings.topics.moves
    consumer = KafkaConsumer(bootstrap_servers=settings.kafka_bootstrap, group_id=None)
    try:
        partitions = consumer.partitions_for_topic(topic)
    finally:
        consumer.close()
    if not partitions:
        raise LookupError(f"topic {topic!r} does not exist on {settings.kafka_bootstrap}")
    partition = partition_of(match_id.encode(), len(partitions))
    for _, taken in refold(read_topic(settings.kafka_bootstrap, topic, [partition]), match_id):
        if taken is not None:
            yield taken


@dataclass
class AuditReport:
    moves: int = 0
    results: int = 0
    repeated_results: int = 0
    dead_letters: int = 0
    outcomes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        verdict = "OK" if self.ok else f"{len(self.problems)} PROBLEMS"
        return (f"audit {verdict}: {self.moves} move records, {self.results} results "
                f"({self.repeated_results} repeats of identical results), {self.dead_letters} dead letters, "
                f"{self.outcomes} outcomes")


def audit(settings: Settings, match_id: Optional[str] = None, limit: int = 50) -> AuditReport:
    """Refold the moves log and compare with what was emitted: every move record must have its
    result (or dead letter), byte for byte equal to the offline fold, and every finished match
    its outcome. Results are matched to moves by their `source` (partition, offset)."""
    topics = settings.topics
    bootstrap = settings.kafka_bootstrap
    report = AuditReport()

    def problem(text: str) -> None:
        if len(report.problems) < limit:
            report.problems.append(text)
        elif len(report.problems) == limit:
            report.problems.append("… more problems not listed")

    emitted: dict[tuple[int, int], list[bytes]] = defaultdict(list)
    for rec in read_topic(bootstrap, topics.results):
        source = orjson.loads(rec.value).get("source") or {}
        emitted[(source.get("partition"), source.get("offset"))].append(rec.value)
    dead = {(orjson.loads(r.value)["partition"], orjson.loads(r.value)["offset"]) for r in read_topic(bootstrap, topics.deadletter)}
    outcomes: dict[str, set[bytes]] = defaultdict(set)
    for rec in read_topic(bootstrap, topics.outcomes):
        outcomes[orjson.loads(rec.value)["match_id"]].add(rec.value)

    expected_outcomes: dict[str, bytes] = {}
    for rec, taken in refold(read_topic(bootstrap, topics.moves), match_id):
        report.moves += 1
        where = f"{topics.moves}[{rec.partition}]@{rec.offset}"
        if taken is None or (taken.result["match_id"] is None or taken.result["event_id"] is None):
            report.dead_letters += 1
            if (rec.partition, rec.offset) not in dead:
                problem(f"{where}: unusable record has no dead letter")
            continue
        expected = encode(taken.result)
        got = emitted.get((rec.partition, rec.offset), [])
        report.results += len(got)
        report.repeated_results += max(0, len(got) - 1)
        if not got:
            problem(f"{where}: no result ({taken.result['match_id']} {taken.result['status']} seq {taken.result['seq']})")
        for value in got:
            if value != expected:
                problem(f"{where}: result differs from the offline fold: got {_brief(value)}, expected {_brief(expected)}")
        if taken.outcome is not None:
            expected_outcomes[taken.result["match_id"]] = encode(taken.outcome)
    for match, expected in expected_outcomes.items():
        got_outcomes = outcomes.get(match, set())
        report.outcomes += len(got_outcomes)
        if got_outcomes != {expected}:
            problem(f"outcome of {match}: got {[_brief(v) for v in got_outcomes]}, expected {_brief(expected)}")
    extra = set(outcomes) - set(expected_outcomes)
    if match_id is None and extra:
        problem(f"outcomes for matches the log does not end: {sorted(extra)[:5]}")
    return report


def _brief(value: bytes) -> str:
    data = orjson.loads(value)
    keys = ("match_id", "status", "seq", "duplicate", "reason") if "status" in data else ("match_id", "outcome")
    return orjson.dumps({k: data.get(k) for k in keys}).decode()
