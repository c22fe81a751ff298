"""The fetch path, workarounds 1, 7 and 9 (the package's docstring): what the consumer fetches and
how it reaches the fold loop's buffer (move records, as `core.Incoming`) and Faust (the others)."""

from __future__ import annotations

import asyncio
import logging
import types
from collections.abc import Awaitable, Callable
from typing import Any

import aiokafka
import faust

from services.common.stage_trace import StageTrace, event_id

from ..core import Incoming

log = logging.getLogger("plylog.rules")

Sink = Callable[[list[Incoming]], Awaitable[None]]


def install_fetch_path(app: faust.App, topic: str, sink: Sink, wait_ms: int, trace: StageTrace | None = None) -> None:
    """Before the app's consumer starts: its fetch long-poll bounded to `wait_ms` (item 1), and the
    records of `topic` handed to `await sink(records)` a fetch at a time (items 7 and 9); each
    marked `fetched` in the stage trace, if one is given."""
    bound_fetch_long_poll(wait_ms)
    if trace is not None:
        deliver_in_batches(app, topic, _traced(sink, trace))
    else:
        deliver_in_batches(app, topic, sink)


def _traced(sink: Sink, trace: StageTrace) -> Sink:
    async def marked(records: list[Incoming]) -> None:
        trace.mark("fetched", [event_id(record.value) for record in records])
        await sink(records)

    return marked


# --- 1. the fetch long-poll ------------------------------------------------------------------------
def bound_fetch_long_poll(wait_ms: int) -> None:
    """While the worker still holds fetched records of some partitions, the fetch in flight covers
    only the others, so a move on a held partition can wait the whole long-poll (p99 1.5 s at
    1,000 moves/s, 70-100 ms with 50 ms). Faust's driver gets a view of aiokafka whose consumer
    uses `wait_ms`; aiokafka itself is left alone."""
    import faust.transport.drivers.aiokafka as driver

    class BoundedLongPollConsumer(SeekCountingConsumer):  # and it counts seeks (item 9)
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "fetch_max_wait_ms": wait_ms})

    view: Any = types.ModuleType("aiokafka")
    view.__dict__.update(vars(aiokafka))
    view.AIOKafkaConsumer = BoundedLongPollConsumer
    driver.aiokafka = view


# --- 7. delivering move records in batches ----------------------------------------------------------
def deliver_in_batches(app: faust.App, topic: str, sink: Sink) -> None:
    """Replace the consumer's drain loop (item 7): records of `topic` go to `await sink(records)`
    (`core.Incoming`s, in fetch order per partition); others to Faust's callback as before."""
    consumer: Any = app.consumer
    consumer._drain_messages = types.MethodType(_drain_in_batches, consumer)
    consumer._plylog_batch_topic, consumer._plylog_sink = topic, sink


async def _drain_in_batches(self: Any, fetcher: Any) -> None:
    """Faust's `Consumer._drain_messages` (faust-streaming 0.15.3) with the batch path above."""
    from faust.transport.consumer import CONSUMER_FETCHING

    topic, sink, callback = self._plylog_batch_topic, self._plylog_sink, self.callback
    read_offset = self._read_offset
    consumer_should_stop, fetcher_should_stop = self._stopped.is_set, fetcher._stopped.is_set
    try:
        while not (consumer_should_stop() or fetcher_should_stop()):
            self.diag.set_flag(CONSUMER_FETCHING)
            records = self.getmany(timeout=1.0)
            await self.sleep(0)  # as Faust: getmany may return at once, again and again
            if self.should_stop:
                continue
            batch, others = [], []
            async for tp, message in records:
                offset, floor = message.offset, read_offset[tp]
                if floor is not None and offset < floor:
                    continue  # Faust drops what comes again below its read offset
                if tp.topic == topic:
                    batch.append(
                        Incoming(message.key, message.value, tp.partition, offset, topic, message.generation_id)
                    )
                    read_offset[tp] = offset
                else:
                    others.append(message)
            if others:  # one race against a flow suspension for all of them, not one per record
                stale = fetched_before_a_seek(self)  # item 9: the counts of this getmany's fetch
                await self.wait_first(_deliver_each(others, callback, read_offset, stale), self.suspend_flow.wait())
            if batch:
                await sink(batch)
            self.diag.unset_flag(CONSUMER_FETCHING)
    except self.consumer_stopped_errors:
        if not self.transport.app.should_stop:
            raise
    except asyncio.CancelledError:
        if not self.transport.app.should_stop:
            raise
    except Exception as exc:
        self.log.exception("Drain messages raised: %r", exc)
        raise


async def _deliver_each(messages: list, callback: Any, read_offset: dict, stale: Any) -> None:
    """Faust's callback for each message in turn, its read offset moved on as Faust does; a record
    fetched before its partition was seeked (item 9) is dropped, its read offset left alone (the
    consumer reads the partition again from where the seek put it)."""
    dropped: dict = {}
    for message in messages:
        if stale(message.tp):
            dropped.setdefault(message.tp, []).append(message.offset)
            continue
        await callback(message)
        read_offset[message.tp] = message.offset
    for tp, offsets in dropped.items():
        log.info(
            "dropped %d record(s) of %s[%d] (offsets %d-%d) fetched before the partition was seeked; "
            "it is read again from where the seek put it",
            len(offsets),
            tp.topic,
            tp.partition,
            min(offsets),
            max(offsets),
        )


# --- 9. records fetched before a seek ---------------------------------------------------------------
class SeekCountingConsumer(aiokafka.AIOKafkaConsumer):
    """aiokafka's consumer whose fetcher counts seeks (`count_seeks`), in the consumer's thread."""

    async def start(self) -> None:
        await super().start()
        count_seeks(self._fetcher)


def count_seeks(fetcher: Any) -> None:
    """aiokafka drops what it fetched of a partition when it is seeked (`Fetcher.seek_to`, used by
    `seek` and `seek_to_committed`), but Faust takes records out of aiokafka in the consumer's
    thread and hands them to the app's thread later: records fetched before a recovery seeked a
    changelog partition back to its start reached Faust after the seek, were counted as read, and
    the records before them were then skipped. Here the fetcher counts the seeks of each
    partition (`seeks`) and notes, with each batch it returns, how many there had been
    (`fetched_after`); both run in the consumer's thread, one after the other, so a batch is from
    before a seek exactly when the counts differ (`fetched_before_a_seek`, read by the drain)."""
    seek_to, fetched_records = fetcher.seek_to, fetcher.fetched_records
    fetcher.seeks, fetcher.fetched_after = {}, {}

    def counted_seek_to(tp: Any, offset: int) -> None:
        fetcher.seeks[tp] = fetcher.seeks.get(tp, 0) + 1
        seek_to(tp, offset)

    async def noted_fetched_records(*args: Any, **kwargs: Any) -> Any:
        records = await fetched_records(*args, **kwargs)
        fetcher.fetched_after = {tp: fetcher.seeks.get(tp, 0) for tp in records}
        return records

    fetcher.seek_to, fetcher.fetched_records = counted_seek_to, noted_fetched_records


def fetched_before_a_seek(consumer: Any) -> Any:
    """`stale(tp)` for the records of Faust's last getmany: True when `tp` was seeked since they
    were fetched (always False without a counting fetcher, as in tests)."""
    fetcher = getattr(getattr(getattr(consumer, "_thread", None), "_consumer", None), "_fetcher", None)
    seeks, fetched_after = getattr(fetcher, "seeks", None), getattr(fetcher, "fetched_after", None)
    if seeks is None or fetched_after is None:
        return lambda tp: False
    return lambda tp: fetched_after.get(tp, 0) != seeks.get(tp, 0)
