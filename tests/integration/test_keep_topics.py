"""tests/integration/harness.keep_topics_for_diagnosis and the read it rests on, on the real broker."""

from __future__ import annotations

import orjson
import pytest

from services.common.kafka_read import read_topic

from .harness import keep_topics_for_diagnosis, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_reading_a_topic_that_does_not_exist_says_so(kafka_bootstrap, topic_prefix):
    """Given no such topic, when it is read, then the error names it (kafka-python alone raised
    a bare 'No partitions are currently assigned', which named nothing)."""
    missing = topic_prefix + "missing"
    with pytest.raises(LookupError, match=missing.replace(".", r"\.") + ".*does not exist"):
        read_topic(kafka_bootstrap, missing)


def test_a_failed_audit_keeps_every_record_and_says_which_topic_could_not_be_read(
    kafka_bootstrap, contract_topics, tmp_path
):
    """Given moves (one a tombstone) and no rules changelog, when the topics are kept, then the file
    holds each record with its place, and one line saying the changelog could not be read."""
    topics = contract_topics(partitions=2)
    produce(kafka_bootstrap, topics.moves, [(b"m-1", b'{"v":1}'), (b"m-2", None)])
    lines = [
        orjson.loads(line)
        for line in keep_topics_for_diagnosis(kafka_bootstrap, topics, tmp_path / "kept").read_bytes().splitlines()
    ]
    moves = sorted((line["key"], line["value"]) for line in lines if line["topic"] == topics.moves)
    assert moves == [("m-1", '{"v":1}'), ("m-2", None)]
    assert all({"partition", "offset"} <= line.keys() for line in lines if line["topic"] == topics.moves)
    assert [line["topic"] for line in lines if "unreadable" in line] == [topics.rules_changelog]
