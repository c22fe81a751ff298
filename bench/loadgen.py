"""The load generator: random legal matches of all four games, pre-generated offline, produced
straight to the moves topic.

The bots are the pure rules (`games.playout`, each game's `random_action`): every record is folded
as it is made, so a match's records are valid in order and can be produced later on any schedule.
Generating is slower than the services under test, so it happens before any clock runs, on every
core, and the records are cached on disk (keyed by the parameters and the source of the rules,
so a rules change never replays stale records).

    python -m bench.loadgen --rate 1000 --matches 200       # open loop: 1,000 moves/s to plylog.moves
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import math
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from aiokafka import AIOKafkaProducer

from games.registry import GAME_MODULES
from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth
from services.common.kafka_partition import partition_of

from .logs import interleave, random_match

GAMES = tuple(GAME_MODULES)
#: records of one complete random match of each game together (13 + 50 + 54 + 117, measured)
RECORDS_PER_MATCH_OF_EACH_GAME = 235
CHUNK_MATCHES = 25  # matches per generation task

Record = tuple[bytes, bytes]  # (key = match id, value = move record)


@dataclass(frozen=True)
class LoadSpec:
    """Which matches: `matches_per_game` random matches of every game; `moves_per_match` keeps
    only each match's first records (openings, for many active matches), None = complete matches."""

    matches_per_game: int
    seed: int = 1
    moves_per_match: int | None = None

    @classmethod
    def for_moves(cls, moves: int, seed: int = 1) -> LoadSpec:
        """Complete matches of all games adding up to about `moves` records."""
        return cls(max(1, math.ceil(moves / RECORDS_PER_MATCH_OF_EACH_GAME)), seed)

    @classmethod
    def active_matches(cls, matches: int, moves_each: int, seed: int = 1) -> LoadSpec:
        """About `matches` matches (split over the games) of `moves_each` records each, none finished."""
        return cls(max(1, math.ceil(matches / len(GAMES))), seed, moves_each)

    def key(self) -> str:
        return f"g{self.matches_per_game}-s{self.seed}-m{self.moves_per_match or 'all'}"


class Playouts(list):
    """One list of move records per match, games alternating (a match of each game, then the next)."""

    @property
    def records(self) -> int:
        return sum(len(match) for match in self)

    def mixed(self, open_at_once: int) -> list[Record]:
        """All records as one stream with `open_at_once` matches in progress at any time."""
        return [(match_key(raw), raw) for raw in interleave((iter(match) for match in self), open_at_once)]


def match_key(raw: bytes) -> bytes:
    """The Kafka key (the match id) of a record made by the bots (`"match_id":"..."` is in it)."""
    start = raw.index(b'"match_id":"') + 12
    return raw[start : raw.index(b'"', start)]


def _generate_chunk(game: str, seed: int, numbers: range, moves_per_match: int | None) -> list[list[bytes]]:
    return [list(itertools.islice(random_match(game, seed, number), moves_per_match)) for number in numbers]


def generate(spec: LoadSpec, workers: int | None = None) -> Playouts:
    """The matches of `spec`, made on every core."""
    tasks = [
        (game, spec.seed + index, range(start, min(start + CHUNK_MATCHES, spec.matches_per_game)), spec.moves_per_match)
        for start in range(0, spec.matches_per_game, CHUNK_MATCHES)
        for index, game in enumerate(GAMES)
    ]
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(tasks) == 1:
        chunks = [_generate_chunk(*task) for task in tasks]
    else:
        with ProcessPoolExecutor(workers) as pool:
            chunks = list(pool.map(_generate_chunk, *zip(*tasks, strict=False)))
    by_game: dict[str, list[list[bytes]]] = defaultdict(list)
    for (game, *_), chunk in zip(tasks, chunks, strict=False):
        by_game[game].extend(chunk)
    return Playouts(
        match for group in itertools.zip_longest(*(by_game[g] for g in GAMES)) for match in group if match is not None
    )


def rules_fingerprint() -> str:
    """A hash of everything that decides which records the bots make."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(
        [
            *root.glob("games/**/*.py"),
            *root.glob("games/data/*"),
            *root.glob("schemas/**/*.py"),
            root / "bench" / "logs.py",
        ]
    ):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cached(spec: LoadSpec, cache_dir: Path, say: Callable[[str], None] = lambda _: None) -> Playouts:
    """`generate(spec)`, from the cache when the same spec was made by the same rules before."""
    path = cache_dir / f"load-{spec.key()}-{rules_fingerprint()}.tsv"
    if path.exists():
        return _read_cache(path)
    say(f"generating {spec.matches_per_game} random matches per game (seed {spec.seed}) ...")
    started = time.perf_counter()
    made = generate(spec)
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".tmp{os.getpid()}")
    with open(partial, "wb") as out:
        for match in made:
            for raw in match:
                out.write(match_key(raw) + b"\t" + raw + b"\n")
    partial.replace(path)
    say(
        f"generated {made.records:,} records of {len(made):,} matches in {time.perf_counter() - started:.1f}s "
        f"(cached in {path})"
    )
    return made


def _read_cache(path: Path) -> Playouts:
    with open(path, "rb") as lines:
        pairs = (line.rstrip(b"\n").split(b"\t", 1) for line in lines)
        return Playouts([raw for _, raw in group] for _, group in itertools.groupby(pairs, key=lambda kv: kv[0]))


# --- producing ----------------------------------------------------------------------------------
def producer(bootstrap: str, **overrides) -> AIOKafkaProducer:
    """The bots' producer: a trusted client writing move records (acks from all replicas)."""
    settings = {"bootstrap_servers": bootstrap, "acks": "all", "linger_ms": 0, "client_id": "plylog-bench"}
    return AIOKafkaProducer(**{**settings, **kafka_auth.aiokafka(KafkaAuth.from_env()), **overrides})


async def produce_all(bootstrap: str, topic: str, records: Iterable[Record], partitions: int) -> int:
    """Produce as fast as the client can (whole batches per partition, order kept per key)."""
    by_partition: dict[int, list[Record]] = defaultdict(list)
    for key, value in records:
        by_partition[partition_of(key, partitions)].append((key, value))
    sender = producer(bootstrap, linger_ms=5, max_batch_size=512 * 1024)
    await sender.start()
    try:
        acks = []
        for partition, items in by_partition.items():
            batch = sender.create_batch()
            for key, value in items:
                if batch.append(key=key, value=value, timestamp=None) is None:
                    acks.append(await sender.send_batch(batch, topic, partition=partition))
                    batch = sender.create_batch()
                    batch.append(key=key, value=value, timestamp=None)
            acks.append(await sender.send_batch(batch, topic, partition=partition))
        await asyncio.gather(*acks)
    finally:
        await sender.stop()
    return sum(len(items) for items in by_partition.values())


async def produce_at_rate(
    bootstrap: str, topic: str, records: Iterable[Record], rate: float, on_sent: Callable[[int], None] = lambda _: None
) -> tuple[int, float]:
    """Open loop: record i is sent at start + i / rate whatever happens downstream (late sends
    go at once, so the offered rate holds as long as the client keeps up). Returns (records,
    achieved records/s)."""
    sender = producer(bootstrap, linger_ms=1)
    await sender.start()
    sent = 0
    started = time.perf_counter()
    try:
        pending = []
        for key, value in records:
            due = started + sent / rate
            delay = due - time.perf_counter()
            if delay > 0.001:
                await asyncio.sleep(delay)
            pending.append(await sender.send(topic, value, key=key))
            sent += 1
            if sent % 1000 == 0:
                await asyncio.gather(*pending)
                pending.clear()
                on_sent(sent)
        await asyncio.gather(*pending)
    finally:
        await sender.stop()
    return sent, sent / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> None:
    from services.common.settings import load

    from .stack import BenchStack, bench_dir

    parser = argparse.ArgumentParser(
        prog="python -m bench.loadgen", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rate", type=float, default=1000.0, help="offered moves/s (open loop); 0 = as fast as possible"
    )
    parser.add_argument("--matches", type=int, default=200, help="complete random matches per game")
    parser.add_argument("--open", type=int, default=200, help="matches in progress at once")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    settings = load()
    playouts = cached(
        LoadSpec(args.matches, args.seed),
        BenchStack(settings.kafka_bootstrap, settings.redis_url, bench_dir(settings.home)).cache_dir,
        print,
    )
    records = playouts.mixed(args.open)
    topic = settings.topics.moves
    print(f"producing {len(records):,} records of {len(playouts):,} matches to {topic} at {settings.kafka_bootstrap}")
    if args.rate > 0:
        sent, rate = asyncio.run(produce_at_rate(settings.kafka_bootstrap, topic, records, args.rate))
    else:
        started = time.perf_counter()
        from services.common.kafka_admin import partition_counts

        partitions = partition_counts(settings.kafka_bootstrap, [topic])[topic]
        sent = asyncio.run(produce_all(settings.kafka_bootstrap, topic, records, partitions))
        rate = sent / (time.perf_counter() - started)
    print(f"sent {sent:,} records at {rate:,.0f} records/s")


if __name__ == "__main__":
    main()
