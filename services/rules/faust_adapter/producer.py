"""The pipeline's producer (ports.Producer) over Faust's, with workarounds 8 and 10 (the package's
docstring): the linger set per batch, and a record's own refusal raised as itself."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import faust
from aiokafka.errors import CorruptRecordException, MessageSizeTooLargeError, RecordListTooLargeError
from faust.exceptions import ProducerSendError

from ..core import Outgoing

#: Errors that say the record itself cannot go to the topic (its size, its encoding).
REFUSED_FOR_THE_RECORD = (MessageSizeTooLargeError, RecordListTooLargeError, CorruptRecordException)


class FaustProducer:
    """Sends each record to the topic of its kind (`topics`: kind -> topic name)."""

    def __init__(self, app: faust.App, topics: dict[str, str], busy_linger_s: float):
        self.app, self.topics, self.busy_linger_s = app, topics, busy_linger_s
        self.linger = Linger(app)

    async def send(self, out: Outgoing) -> asyncio.Future[Any]:
        """Workaround 10: Faust's `Producer.send` raises its own `ProducerSendError` from any error
        aiokafka raises before sending; a refusal of the record is raised as itself. In one
        coroutine, not a wrapper: this runs for every record."""
        try:
            sent = await self.app.producer.send(self.topics[out.kind], out.key, out.value, out.partition, None, None)
            return cast("asyncio.Future[Any]", sent)  # a FutureMessage
        except ProducerSendError as error:
            if isinstance(error.__cause__, REFUSED_FOR_THE_RECORD):
                raise error.__cause__ from None
            raise

    def refused(self, error: BaseException) -> bool:
        return isinstance(error, REFUSED_FOR_THE_RECORD)

    def pace(self, busy: bool) -> None:
        self.linger.set(self.busy_linger_s if busy else 0.0)


class Linger:
    """Workaround 8. `set(seconds)`: the linger of the producer batches aiokafka opens from then on
    (its MessageAccumulator reads `_linger_time` when it opens a batch for a partition). Many moves
    together share produce requests with a little linger; a lone move waits for none
    (docs/decisions/faust-linger.md)."""

    def __init__(self, app: faust.App):
        self._app = app
        self.seconds: float | None = None

    def set(self, seconds: float) -> None:
        if seconds == self.seconds:
            return
        faust_producer: Any = self._app.producer
        producer = faust_producer._producer  # aiokafka's, None until Faust's producer started
        if producer is not None:
            producer._message_accumulator._linger_time = seconds
            self.seconds = seconds
