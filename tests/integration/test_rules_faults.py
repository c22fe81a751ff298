"""Rules workers under faults on the real broker: a worker paused past its session while another
takes over, and workers joining and leaving under load. Every move answered, nothing applied
twice, `plylog audit` clean, every worker up."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from .harness import mixed_bot_traffic, produce, rules_worker, wait_until_answered, wait_until_some_answered
from .test_rules_worker import GAMES, _wait_for_split, assert_audit_clean

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SESSION_TIMEOUT_S = 10.0  # the rules worker's broker_session_timeout


def test_a_worker_paused_past_its_session_cannot_roll_states_back(kafka_bootstrap, contract_topics, tmp_path):
    """SIGSTOP one of two workers for longer than the session timeout while it works through a
    backlog: the other takes its partitions over and answers them; resumed, the paused one ends the
    batch it was in and writes older states and positions after the new owner's. Then
    SIGKILL both, restart, more load: recovery must keep the newest states, or the second load is
    folded on rolled-back matches and the audit finds it."""
    topics = contract_topics(partitions=6)
    traffic = mixed_bot_traffic(GAMES, matches=160, seed=21, prefix="pause-")
    backlog, during, after = int(len(traffic) * 0.4), int(len(traffic) * 0.8), len(traffic)
    first = rules_worker(kafka_bootstrap, topics, tmp_path, "rules-1")
    second = rules_worker(kafka_bootstrap, topics, tmp_path, "rules-2")
    try:
        for worker in (first, second):
            worker.start()
        for worker in (first, second):
            worker.wait_ready()
        _wait_for_split(first, second)
        produce(kafka_bootstrap, topics.moves, traffic[:backlog])
        wait_until_some_answered(kafka_bootstrap, topics)
        first.pause()  # most likely inside a batch of hundreds of records
        # Moves keep coming while it is paused and after: the second worker stores newer positions
        # after the late writes of the resumed one.
        sender = threading.Thread(
            target=produce, args=(kafka_bootstrap, topics.moves, traffic[backlog:during], 28.0 / (during - backlog))
        )
        sender.start()
        time.sleep(SESSION_TIMEOUT_S * 1.6)
        first.resume()
        sender.join()
        wait_until_answered(kafka_bootstrap, topics, during, timeout=240, workers=[first, second])
        assert first.alive and second.alive, first.tail() + second.tail()
        for worker in (first, second):
            worker.kill()
        for worker in (first, second):
            worker.start()
        for worker in (first, second):
            worker.wait_ready()
        produce(kafka_bootstrap, topics.moves, traffic[during:])
        wait_until_answered(kafka_bootstrap, topics, after, timeout=240, workers=[first, second])
    finally:
        first.resume()
        for worker in (first, second):
            worker.stop()
    assert_audit_clean(kafka_bootstrap, topics, traffic, tmp_path)


def test_workers_join_leave_and_join_again_under_load_and_every_one_stays_up(
    kafka_bootstrap, contract_topics, tmp_path
):
    """Scale out and in while moves arrive, with recoveries running while the assignment changes:
    a worker restarted under load is joined by a second one while it recovers; the second leaves
    and joins again. Every worker stays up."""
    topics = contract_topics(partitions=6)
    traffic = mixed_bot_traffic(GAMES, matches=160, seed=23, prefix="scale2-")
    first, second = (rules_worker(kafka_bootstrap, topics, tmp_path, f"rules-{n}") for n in (1, 2))
    try:
        first.start().wait_ready()
        sender = threading.Thread(target=produce, args=(kafka_bootstrap, topics.moves, traffic, 45.0 / len(traffic)))
        sender.start()
        time.sleep(8)
        first.kill()  # a restart under load ...
        first.start()
        second.start()  # ... joined while it recovers
        for worker in (first, second):
            worker.wait_ready()
        _wait_for_split(first, second)
        for _ in range(2):
            time.sleep(4)
            second.stop()  # scale in: the first recovers the second's partitions
            assert second.popen.returncode == 0, second.tail()
            time.sleep(0.5)
            second.start().wait_ready()  # and out again, during that recovery
            _wait_for_split(first, second)
            assert first.alive, first.tail()
        sender.join()
        wait_until_answered(kafka_bootstrap, topics, len(traffic), timeout=240, workers=[first, second])
        assert first.alive and second.alive and first.starts == 2, first.tail() + second.tail()
    finally:
        for worker in (first, second):
            worker.stop()
    assert_audit_clean(kafka_bootstrap, topics, traffic, tmp_path)


def test_fetching_that_starts_past_unanswered_moves_never_skips_them(kafka_bootstrap, contract_topics, tmp_path):
    """No position stored, and fetching starts halfway through every partition: what Faust's first
    assignment gave a worker taking over from one paused before it stored a position (Faust had
    dropped the records it fetched before the rebalance and had no committed offset to seek back
    to), here made by committing the group's offsets ahead, as an operator resetting the group
    would. The worker fetches every partition again from its first record and answers every move;
    it used to answer the second halves only."""
    topics = contract_topics(partitions=3)
    traffic = mixed_bot_traffic(GAMES, matches=30, seed=5, prefix="ahead-")
    produce(kafka_bootstrap, topics.moves, traffic)
    partitions = [TopicPartition(topics.moves, p) for p in range(3)]
    group = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=topics.rules_group, enable_auto_commit=False)
    try:
        ends = group.end_offsets(partitions)
        assert all(end > 20 for end in ends.values()), ends
        group.commit({tp: OffsetAndMetadata(ends[tp] // 2, "", -1) for tp in partitions})
    finally:
        group.close()
    worker = rules_worker(kafka_bootstrap, topics, tmp_path)
    try:
        worker.start()
        worker.wait_ready()
        wait_until_answered(kafka_bootstrap, topics, len(traffic), timeout=120, workers=[worker])
        assert worker.alive, worker.tail()
        assert "were not delivered before" in worker.tail(lines=100_000)
    finally:
        worker.stop()
    assert_audit_clean(kafka_bootstrap, topics, traffic, tmp_path)
