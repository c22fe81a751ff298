"""Producing a batch (services/rules/produce.py) and dead letters (services/rules/core.py): a record
Kafka refuses for its own sake is replaced and the worker goes on; any other refusal stops it; a
dead letter always fits. Through a fake producer port, and through the Faust adapter's producer
(workaround 10)."""

from __future__ import annotations

import asyncio
import base64
import hashlib

import orjson
import pytest
from aiokafka.errors import KafkaTimeoutError, MessageSizeTooLargeError, NotEnoughReplicasError
from faust.exceptions import ProducerSendError

from services.rules.core import DEAD_LETTER_RAW_BYTES, Incoming, Outgoing, dead_letter
from services.rules.faust_adapter.producer import REFUSED_FOR_THE_RECORD, FaustProducer
from services.rules.produce import acknowledged, produce_all


class FakeKafka:
    """Acknowledges records up to `limit` bytes; refuses larger ones the way the broker does (the
    whole request fails), or raises `error` for everything."""

    def __init__(self, limit: int = 10_000, error: Exception | None = None, client_side: bool = False):
        self.limit, self.error, self.client_side = limit, error, client_side
        self.written: list[Outgoing] = []

    async def send(self, out: Outgoing) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        if self.error is not None:
            future.set_exception(self.error)
        elif len(out.value) > self.limit:
            if self.client_side:
                raise MessageSizeTooLargeError("over max_request_size")
            future.set_exception(MessageSizeTooLargeError("broker says MESSAGE_TOO_LARGE"))
        else:
            self.written.append(out)
            future.set_result(None)
        return future

    def refused(self, error: BaseException) -> bool:
        return isinstance(error, REFUSED_FOR_THE_RECORD)

    def pace(self, busy: bool) -> None:
        pass


def move(value: bytes, offset: int = 7) -> Incoming:
    return Incoming(b"m1", value, 2, offset, "plylog.moves")


@pytest.mark.parametrize("client_side", [False, True])
async def test_a_result_too_large_for_the_topic_becomes_a_dead_letter_and_the_rest_goes_out(client_side):
    kafka = FakeKafka(limit=2_000, client_side=client_side)
    small = Outgoing("results", b"m1", b"x" * 100, 2, move(b"{}", 1))
    huge = Outgoing("results", b"m1", b"y" * 5_000, 2, move(b"{}", 2))
    replaced = await produce_all(kafka, [small, huge])
    assert replaced == 1
    assert [o.kind for o in kafka.written] == ["results", "deadletter"]
    letter = orjson.loads(kafka.written[1].value)
    assert letter["offset"] == 2 and "5000 bytes" in letter["error"] and "MessageSizeTooLargeError" in letter["error"]
    assert hashlib.sha256(huge.value).hexdigest() in letter["error"]


async def test_a_dead_letter_too_large_for_its_topic_is_sent_again_without_the_raw_bytes():
    kafka = FakeKafka(limit=1_000)
    letter = dead_letter(move(b"\x00" * 5_000), "not JSON")
    assert await produce_all(kafka, [letter]) == 1
    sent = orjson.loads(kafka.written[0].value)
    assert sent["raw_b64"] == "" and sent["raw_size"] == 5_000 and sent["raw_truncated"] is True
    assert sent["raw_sha256"] == hashlib.sha256(b"\x00" * 5_000).hexdigest()


@pytest.mark.parametrize("error", [NotEnoughReplicasError("min.insync.replicas"), KafkaTimeoutError()])
async def test_kafka_refusing_for_another_reason_fails_the_batch(error):
    with pytest.raises(type(error)):
        await produce_all(FakeKafka(error=error), [Outgoing("results", b"m1", b"{}", 0)])


async def test_a_replacement_kafka_refuses_too_fails_the_batch_with_what_to_check():
    with pytest.raises(RuntimeError, match=r"max\.message\.bytes of the dead-letter topic"):
        await produce_all(FakeKafka(limit=10), [Outgoing("results", b"m1", b"z" * 100, 0, move(b"{}"))])


def test_a_dead_letter_keeps_at_most_64_kib_of_raw_and_names_the_whole_record():
    raw = bytes(range(256)) * 3_000  # 768,000 bytes, no usable ids
    letter = orjson.loads(dead_letter(move(raw), "not JSON").value)
    assert base64.b64decode(letter["raw_b64"]) == raw[:DEAD_LETTER_RAW_BYTES]
    assert letter["raw_size"] == len(raw) and letter["raw_truncated"] is True
    assert letter["raw_sha256"] == hashlib.sha256(raw).hexdigest()
    assert len(dead_letter(move(raw), "e" * 100_000).value) < 100_000  # and the error is bounded too


async def test_a_worker_stopping_mid_batch_leaves_the_producers_futures_to_the_producer():
    # Cancelling the wait (the worker stops while a batch is in flight) must not cancel the
    # producer's futures: Faust sets their results afterwards, and a cancelled one raises there.
    loop = asyncio.get_running_loop()
    delivery = loop.create_future()
    waiting = asyncio.ensure_future(acknowledged(FakeKafka(), [Outgoing("results", b"m", b"{}", 0)], [delivery]))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not delivery.cancelled()
    delivery.set_result("metadata")  # what the producer does when Kafka answers


class RefusingAioKafka:
    """aiokafka's producer as Faust's `Producer.send` calls it: a record over `limit` bytes is
    refused on the client side (over max_request_size), before anything is sent."""

    def __init__(self, limit: int):
        self.limit, self.sent = limit, []

    async def send(self, topic, value, key=None, partition=None, timestamp_ms=None, headers=None):
        if len(value) > self.limit:
            raise MessageSizeTooLargeError(
                "The message is 1010300 bytes when serialized which is larger than "
                "the maximum request size you have configured"
            )
        self.sent.append((topic, key, value))
        future = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future


def faust_producer(aio: RefusingAioKafka):
    import faust

    producer = faust.App("test-refusals", broker="kafka://127.0.0.1:1").producer
    producer._producer = aio
    return producer


def adapter(producer, topics: dict[str, str]) -> FaustProducer:
    """The adapter's producer port over Faust's `producer`."""
    return FaustProducer(type("App", (), {"producer": producer})(), topics, busy_linger_s=0.002)


async def test_faust_raises_its_own_error_for_a_refusal_on_the_client_side():
    """Workaround 10: fails the day Faust passes aiokafka's error on as it is."""
    with pytest.raises(ProducerSendError) as raised:
        await faust_producer(RefusingAioKafka(limit=10)).send("t", b"k", b"x" * 100, 0, None, None)
    assert isinstance(raised.value.__cause__, MessageSizeTooLargeError)


async def test_a_record_faust_refuses_on_the_client_side_is_replaced_and_the_rest_goes_out():
    aio = RefusingAioKafka(limit=2_000)
    producer = faust_producer(aio)

    port = adapter(producer, {"results": "results", "deadletter": "deadletter"})
    sends = [Outgoing("results", b"m1", b"r" * 3_000, 2, move(b"{}", 1)), Outgoing("results", b"m1", b"{}", 2)]
    assert await produce_all(port, sends) == 1
    assert [topic for topic, _, _ in aio.sent] == ["results", "deadletter"]  # the rest at once, then the replacement
    assert "3000 bytes" in orjson.loads(aio.sent[1][2])["error"]


async def test_faust_errors_that_are_not_the_records_fault_still_fail_the_batch():
    class Unreachable(RefusingAioKafka):
        async def send(self, *args, **kwargs):
            raise KafkaTimeoutError()

    producer = faust_producer(Unreachable(limit=0))
    with pytest.raises(ProducerSendError):
        await produce_all(adapter(producer, {"results": "t"}), [Outgoing("results", b"m1", b"{}", 0)])


def test_a_key_too_large_for_a_dead_letter_is_cut_and_named_by_its_size_and_digest():
    """Kafka lets a key be as large as a record; a dead letter keyed by all of it was over the
    producer's request size. A key that fits is kept as received."""
    from schemas.records import DeadLetter

    huge = b"k" * 1_010_000
    out = dead_letter(Incoming(huge, b"\x89 not JSON", 2, 7, "plylog.moves"), "not JSON")
    letter = DeadLetter.model_validate_json(out.value)
    assert out.key == huge[:DEAD_LETTER_RAW_BYTES] and len(out.key) + len(out.value) < 100_000
    assert (
        letter.key_truncated and letter.key_size == len(huge) and letter.key_sha256 == hashlib.sha256(huge).hexdigest()
    )
    kept = dead_letter(move(b"\x89"), "not JSON")
    assert kept.key == b"m1" and "key_truncated" not in orjson.loads(kept.value)
