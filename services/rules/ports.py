"""What the rules worker's pipeline (pipeline.py) asks of the world: four narrow ports.

The Faust adapter (faust_adapter/) implements them over Faust and aiokafka; the unit tests
implement them in memory (tests/unit/rules_world.py), with crashes, rebalances and refusals.

- `Producer`: hands a record to Kafka; its delivery future says when Kafka acknowledged it.
- `Table`: the match states (and, in Faust, the positions: one changelog; positions-in-table.md).
- `PositionStore`: each moves partition's position, the offset of the last record answered.
- `Group`: the consumer group as the pipeline sees it: the generation of the assignment, the
  partitions owned, fetching a partition again, and committing offsets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Protocol

from .core import Incoming, Outgoing


class Producer(Protocol):
    async def send(self, out: Outgoing) -> asyncio.Future[Any]:
        """Hand `out` to Kafka (not awaited); its delivery future (fails with Kafka's error)."""
        ...

    def refused(self, error: BaseException) -> bool:
        """Whether `error` refuses the record itself (its size), so that it must be replaced,
        rather than Kafka failing (the batch then fails and the worker stops)."""
        ...

    def pace(self, busy: bool) -> None:
        """Many records come together (`busy`): let the next produce requests gather them."""
        ...


class Table(Protocol):
    def get(self, key: bytes) -> bytes | None: ...

    def store(self, key: bytes, value: bytes, partition: int) -> None:
        """Write `value`; its changelog record goes to `partition` (the move's partition)."""
        ...

    def forget(self, key: bytes, partition: int) -> None:
        """Delete `key` (a tombstone on the changelog `partition`)."""
        ...

    def entries(self) -> Iterable[tuple[bytes, bytes]]:
        """Every (key, value) in the table now (the sweep's scan)."""
        ...

    async def acknowledged(self) -> None:
        """Wait until Kafka has every write made so far; raise the first it refused."""
        ...


class PositionStore(Protocol):
    def position(self, partition: int) -> int:
        """The offset of the last record of `partition` answered (-1: none)."""
        ...

    def store(self, partition: int, offset: int) -> None: ...

    async def acknowledged(self) -> None:
        """Wait until Kafka has every position stored so far; raise the first it refused."""
        ...


class Group(Protocol):
    @property
    def generation(self) -> int:
        """The generation of the current assignment (it changes with every rebalance)."""
        ...

    def owned(self) -> set[int]:
        """The moves partitions this worker owns now."""
        ...

    async def fetch_again(self, partition: int, offset: int) -> None:
        """Fetch `partition` again from `offset`."""
        ...

    async def commit(self, offsets: dict[int, int]) -> bool:
        """Commit the group's offsets (partition -> next offset to read)."""
        ...


class Source(Protocol):
    """The move records fetched, ahead of the fold (batching.RecordBuffer)."""

    async def take(self) -> list[Incoming]: ...

    def discard(self, partition: int) -> int: ...

    def __len__(self) -> int: ...
