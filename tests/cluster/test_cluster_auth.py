"""Who may write which topic on `plylog up --cluster` (services/common/kafka_acls.py): every one of
the four client libraries plylog uses, logged in as the gateway, may produce moves and is refused
results and outcomes with an authorization error; the rules worker's user may write outcomes; a
client without credentials, or with a wrong password, gets no answer from the cluster."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess

import aiokafka.errors
import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError, TopicAuthorizationFailedError

from services.common import kafka_auth
from services.common.kafka_auth import KafkaAuth

pytestmark = [pytest.mark.integration, pytest.mark.cluster, pytest.mark.timeout(300)]


def kafka_python_send(bootstrap: str, auth: KafkaAuth | None, topic: str) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", max_block_ms=10_000, retries=0, **kafka_auth.kafka_python(auth)
    )
    try:
        producer.send(topic, key=b"forged", value=b"{}").get(timeout=20)
    finally:
        producer.close(timeout=5)


async def aiokafka_send(bootstrap: str, auth: KafkaAuth, topic: str) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", **kafka_auth.aiokafka(auth))
    await producer.start()
    try:
        await asyncio.wait_for(producer.send_and_wait(topic, b"{}", key=b"forged"), 20)
    finally:
        await producer.stop()


def librdkafka_send(bootstrap: str, auth: KafkaAuth, topic: str) -> str | None:
    """The delivery error's name, None when the record was written."""
    import confluent_kafka

    errors = []
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "message.timeout.ms": 20_000, **kafka_auth.librdkafka(auth)}
    )
    producer.produce(topic, b"{}", b"forged", on_delivery=lambda error, _: errors.append(error))
    producer.flush(30)
    assert len(errors) == 1, "no delivery report within 30 s"
    return None if errors[0] is None else errors[0].name()


def kcat_send(bootstrap: str, auth: KafkaAuth, topic: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            "kcat",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-P",
            "-k",
            "forged",
            "-X",
            "message.timeout.ms=20000",
            *kafka_auth.kcat(auth),
        ],
        input=b"{}\n",
        capture_output=True,
        timeout=60,
    )


def test_the_gateways_user_writes_moves_and_is_refused_results_and_outcomes_by_every_client(local_cluster):
    cluster = local_cluster
    topics = cluster.topics("auth")
    gateway = cluster.auth("gateway")
    kafka_python_send(cluster.bootstrap, gateway, topics.moves)  # what it may do
    asyncio.run(aiokafka_send(cluster.bootstrap, gateway, topics.moves))
    assert librdkafka_send(cluster.bootstrap, gateway, topics.moves) is None
    for topic in (topics.outcomes, topics.results):
        with pytest.raises(TopicAuthorizationFailedError):
            kafka_python_send(cluster.bootstrap, gateway, topic)
        with pytest.raises(aiokafka.errors.TopicAuthorizationFailedError):
            asyncio.run(aiokafka_send(cluster.bootstrap, gateway, topic))
        assert librdkafka_send(cluster.bootstrap, gateway, topic) == "TOPIC_AUTHORIZATION_FAILED"
        if shutil.which("kcat"):  # refused too; a kcat on librdkafka < 2.6.1 (Debian's: 2.0.2) cannot
            # log in to Kafka 4 with SCRAM at all (librdkafka's nonce bug, fixed in 2.6.1)
            sent = kcat_send(cluster.bootstrap, gateway, topic)
            assert sent.returncode != 0 and re.search(rb"(?i)authori[sz]|authentication", sent.stderr), sent.stderr
    # the same for the bot service; the rules worker alone writes outcomes and results
    with pytest.raises(TopicAuthorizationFailedError):
        kafka_python_send(cluster.bootstrap, cluster.auth("bots"), topics.outcomes)
    for reader in ("projector", "reader"):
        with pytest.raises(TopicAuthorizationFailedError):
            kafka_python_send(cluster.bootstrap, cluster.auth(reader), topics.moves)
    kafka_python_send(cluster.bootstrap, cluster.auth("rules"), topics.outcomes)
    kafka_python_send(cluster.bootstrap, cluster.auth("rules"), topics.results)
    outcomes = read_all(cluster.bootstrap, cluster.auth("reader"), topics.outcomes)
    assert outcomes == [b"forged"], outcomes  # only the rules worker's record got through


def read_all(bootstrap: str, auth: KafkaAuth, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
        **kafka_auth.kafka_python(auth),
    )
    try:
        return [record.key for record in consumer]
    finally:
        consumer.close()


def test_a_client_without_credentials_or_with_a_wrong_password_gets_no_answer(local_cluster):
    cluster = local_cluster
    import confluent_kafka

    wrong = KafkaAuth(cluster.auth("gateway").username, "not-the-password")
    for auth in (None, wrong):
        with pytest.raises(KafkaError):
            KafkaAdminClient(
                bootstrap_servers=cluster.bootstrap,
                request_timeout_ms=5000,
                bootstrap_timeout_ms=5000,
                **kafka_auth.kafka_python(auth),
            ).list_topics()
        with pytest.raises(KafkaError):
            kafka_python_send(cluster.bootstrap, auth, "plylog.moves")
        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": cluster.bootstrap, "group.id": "nobody", **kafka_auth.librdkafka(auth)}
        )
        try:
            with pytest.raises(confluent_kafka.KafkaException):
                consumer.list_topics(timeout=5)
        finally:
            consumer.close()
