"""Where Kafka puts a key: Java's default partitioner (murmur2 of the key bytes), which kafka-python
and aiokafka use too and librdkafka with `partitioner=murmur2_random`: a match's home partition
(docs/decisions/home-partition.md). Part of the Kafka layer (docs/decisions/kafka-layer.md)."""

from __future__ import annotations

from functools import lru_cache

from kafka.partitioner.default import murmur2

#: Keys longer than this are not cached: a match id is at most 64 characters, while anyone may
#: write keys of up to a record's size, and 16,384 of those would be held by the cache.
CACHED_KEY_BYTES = 256


def partition_of(key: bytes, partitions: int) -> int:
    """Kafka's default partition for a key. Cached: kafka-python's murmur2 is pure Python, and the
    same match keys come again with every move."""
    if len(key) > CACHED_KEY_BYTES:
        return _partition(key, partitions)
    return _cached_partition(key, partitions)


def _partition(key: bytes, partitions: int) -> int:
    result: int = (murmur2(key) & 0x7FFFFFFF) % partitions
    return result


_cached_partition = lru_cache(maxsize=16_384)(_partition)
