"""Which offsets of `plylog.results` the bot service may commit while it thinks about many turns at
once: per partition, everything before the oldest result whose move is still owed (being decided or
sent). A crash re-reads from there and decides those turns again under the same event ids (answered
`duplicate` where the move had gone out), so no turn is lost and none is played twice."""

from __future__ import annotations


class Progress:
    def __init__(self) -> None:
        self._next: dict[int, int] = {}  # partition -> the offset after the last one read
        self._owed: dict[int, set[int]] = {}  # partition -> offsets of results whose move is owed
        self._committed: dict[int, int] = {}

    def read(self, partition: int, offset: int) -> None:
        self._next[partition] = max(self._next.get(partition, 0), offset + 1)

    def owe(self, partition: int, offset: int) -> None:
        self._owed.setdefault(partition, set()).add(offset)

    def paid(self, partition: int, offset: int) -> None:
        owed = self._owed.get(partition)
        if owed is not None:
            owed.discard(offset)

    def owed(self) -> int:
        return sum(len(o) for o in self._owed.values())

    def forget(self, partitions: set[int]) -> None:
        """Partitions this instance no longer holds: their next owner starts at the committed offset."""
        for table in (self._next, self._owed, self._committed):
            for partition in partitions:
                table.pop(partition, None)

    def to_commit(self, partitions: set[int] | None = None) -> dict[int, int]:
        """The offsets to commit now (of `partitions`, default all) that moved since the last commit."""
        points = {}
        for partition, after in self._next.items():
            if partitions is not None and partition not in partitions:
                continue
            owed = self._owed.get(partition)
            point = min(owed) if owed else after
            if self._committed.get(partition) != point:
                points[partition] = point
        return points

    def committed(self, points: dict[int, int]) -> None:
        self._committed.update(points)
