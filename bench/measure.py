"""Measuring: how far a consumer has got (end offsets of an output topic, offsets the projector
stored in Redis), followed over time into a series; rates and percentiles from it."""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, TopicPartition

from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth

SAMPLE_INTERVAL_S = 0.025


class Stalled(RuntimeError):
    """No progress for too long: the message says how far it got."""


class EndOffsets:
    """Sum of the end offsets of a topic (the number of records written to it so far)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            client_id="plylog-bench-progress",
            **kafka_auth.aiokafka(KafkaAuth.from_env()),
        )
        self.partitions = [TopicPartition(topic, p) for p in range(partitions)]

    async def __aenter__(self) -> EndOffsets:
        await self.consumer.start()
        return self

    async def __aexit__(self, *_) -> None:
        await self.consumer.stop()

    async def total(self) -> int:
        return sum((await self.consumer.end_offsets(self.partitions)).values())


async def count_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Records a reader of the whole topic gets now (after compaction: fewer than its offsets)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        client_id="plylog-bench-count",
        auto_offset_reset="earliest",
        **kafka_auth.aiokafka(KafkaAuth.from_env()),
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        count, left = 0, {tp for tp in tps if ends[tp] > 0}
        while left:
            for tp, records in (await consumer.getmany(*left, timeout_ms=1000)).items():
                count += len(records)
                if records and records[-1].offset + 1 >= ends[tp]:
                    left.discard(tp)
            for tp in list(left):
                if await consumer.position(tp) >= ends[tp]:
                    left.discard(tp)
        return count
    finally:
        await consumer.stop()


@dataclass
class Series:
    """(seconds since the start of following, records done) samples."""

    points: list[tuple[float, int]] = field(default_factory=list)

    def throughput(self, window_s: float = 0.5) -> list[tuple[float, float]]:
        """(time, records/s over the preceding window): for the throughput-over-time plot."""
        out, left = [], 0
        for t, done in self.points:
            while self.points[left][0] < t - window_s:
                left += 1
            t0, d0 = self.points[left]
            if t > t0:
                out.append((t, (done - d0) / (t - t0)))
        return out

    def to_json(self) -> list[list[float]]:
        return [[round(t, 3), done] for t, done in self.points]


async def follow(
    progress: Callable[[], Awaitable[int]],
    total: int,
    *,
    stall_s: float = 60.0,
    on_sample: Callable[[int], None] = lambda _: None,
    check: Callable[[], None] = lambda: None,
) -> Series:
    """Sample `progress()` until it reaches `total`. `check()` runs at every sample (raise to
    abort, e.g. when a process under test died); no progress for `stall_s` raises Stalled."""
    series = Series()
    started = time.perf_counter()
    last_change, last = started, -1
    while True:
        done = await progress()
        now = time.perf_counter()
        series.points.append((now - started, done))
        on_sample(done)
        if done >= total:
            return series
        if done != last:
            last_change, last = now, done
        elif now - last_change > stall_s:
            raise Stalled(f"stuck at {done:,} of {total:,} for {stall_s:g}s")
        check()
        await asyncio.sleep(SAMPLE_INTERVAL_S)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by the nearest-rank method."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def latency_figures(sorted_ms: Sequence[float], prefix: str = "") -> dict[str, float]:
    """p50, p95, p99 and max of sorted latencies (ms), named `<prefix>p50_ms` ..."""
    if not sorted_ms:
        return {}
    return {**{f"{prefix}p{q}_ms": percentile(sorted_ms, q) for q in (50, 95, 99)}, f"{prefix}max_ms": sorted_ms[-1]}


def spread(values: Sequence[float]) -> dict[str, float | None]:
    """Median, min and max of the runs' values (NaNs, i.e. failed measures, dropped)."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    if not kept:
        return {"median": None, "min": None, "max": None, "runs": list(values)}
    return {"median": statistics.median(kept), "min": min(kept), "max": max(kept), "runs": list(values)}
