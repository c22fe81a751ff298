"""The rules worker's Faust app settings: its broker, consumer, producer, commit and table settings,
each with the reason it is not Faust's default."""

from __future__ import annotations

from typing import Any

from services.common import kafka_auth
from services.common.settings import Settings

from .recovery import TableManager
from .table import MatchTable


def app_settings(settings: Settings, partitions: int, worker_name: str, datadir: str) -> dict[str, Any]:
    """Keyword arguments of `faust.App` for the rules worker `worker_name`."""
    rules = settings.rules
    return dict(
        broker=[f"kafka://{server}" for server in settings.kafka_servers],
        broker_credentials=kafka_auth.faust(settings.kafka_auth),
        store="memory://",
        processing_guarantee="at_least_once",
        topic_partitions=partitions,
        topic_replication_factor=settings.replication_factor,  # the changelog's (3 on a cluster)
        consumer_auto_offset_reset="earliest",
        web_enabled=False,  # the ops server answers from a thread of its own (services/rules/ops.py)
        datadir=datadir,
        producer_linger=0.0,  # set per batch (workaround 8)
        producer_max_batch_size=256 * 1024,
        producer_acks=-1,
        producer_request_timeout=rules.produce_timeout_s,
        broker_commit_interval=1.0,
        # At most a batch of records a poll: uncapped, one poll handed over all that aiokafka had
        # fetched (1 MiB a partition: ~48,000 moves of a backlog), each made a Faust message at
        # once and held in the buffer, where the cyclic collector walked them again and again.
        broker_max_poll_records=rules.batch_max,
        # A restarted worker takes back its own partitions at once (static membership);
        # a worker that is gone for good is replaced after the session timeout.
        consumer_group_instance_id=f"{settings.topics.prefix}{worker_name}",
        broker_session_timeout=10.0,
        broker_heartbeat_interval=2.0,
        table_standby_replicas=rules.standby_replicas,
        Table=MatchTable,  # app.Table's class (workaround 3)
        TableManager=TableManager,  # workaround 4
    )
