"""Kafka admin helpers shared by the CLI, the services and the tests (kafka-python, sync).

    from services.common import kafka_admin
    kafka_admin.wait_for_metadata("127.0.0.1:9092", timeout=30)
    kafka_admin.ensure_contract_topics("127.0.0.1:9092", prefix="t1234abcd.", partitions=3)

Every function takes `auth`, the credentials to connect with; None: this process's own, from its
environment (PLYLOG_KAFKA_USERNAME ..., none on an open broker).

Topics follow the wire contract (docs/contract.md): ``<prefix>moves``, ``<prefix>results``, ``<prefix>outcomes``
(always ONE partition), ``<prefix>deadletter``; moves is kept forever.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import KafkaError

from . import kafka_auth
from .kafka_auth import KafkaAuth
from .settings import DEFAULT_PARTITIONS, DEFAULT_TOPIC_PREFIX, FOREVER, Topics

log = logging.getLogger(__name__)

TOPIC_ALREADY_EXISTS = 36
#: The personal-data topics (profiles, player keys) roll a segment and compact it within this; a
#: deleted key is gone from every segment within about twice it (docs/personal-data.md, "How long").
ERASURE_STEP_MS = 3_600_000


class KafkaAdminError(RuntimeError):
    """A Kafka admin operation failed; the message says what and why."""


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)
    replication: int = 1


def contract_topic_specs(
    prefix: str = DEFAULT_TOPIC_PREFIX,
    partitions: int = DEFAULT_PARTITIONS,
    retention_ms: int = FOREVER,
    replication: int = 1,
    min_insync: int = 1,
) -> list[TopicSpec]:
    """The contract topics for `prefix`: moves/results/deadletter get `partitions`
    partitions, outcomes and lobby exactly one; moves and lobby are kept forever, the others `retention_ms`; each
    with `replication` replicas of which `min_insync` must have a write (acks=all). The personal-data
    topics (profiles, player keys) are compacted, one partition each."""
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    t = Topics(prefix)
    insync = {"min.insync.replicas": str(min_insync)}
    keep = {"retention.ms": str(retention_ms), "retention.bytes": "-1", **insync}
    forever = {"retention.ms": str(FOREVER), "retention.bytes": "-1", **insync}
    return [
        TopicSpec(t.moves, partitions, forever, replication),
        TopicSpec(t.results, partitions, dict(keep), replication),
        TopicSpec(t.outcomes, 1, dict(keep), replication),
        TopicSpec(t.deadletter, partitions, dict(keep), replication),
        TopicSpec(t.lobby, 1, dict(forever), replication),  # kept forever: pairings are replayed from it
        TopicSpec(t.tournaments, 1, dict(forever), replication),  # a tournament is replayed from its log
        # personal data (docs/personal-data.md): compacted, a deleted key gone within a bound
        *(TopicSpec(n, 1, personal_topic_configs(ERASURE_STEP_MS, min_insync), replication) for n in t.personal()),
    ]


def personal_topic_configs(step_ms: int, min_insync: int = 1) -> dict[str, str]:
    """A compacted topic whose deleted keys do not outlive about 2 x `step_ms`: a segment rolls at
    the first write `step_ms` after it opened (segment.ms), the cleaner must compact a record at most
    `step_ms` after it was written (max.compaction.lag.ms) and treats any dirt as worth a pass
    (min.cleanable.dirty.ratio), and a tombstone itself is dropped `step_ms` after that pass."""
    step = str(step_ms)
    return {
        "cleanup.policy": "compact",
        "segment.ms": step,
        "max.compaction.lag.ms": step,
        "delete.retention.ms": step,
        "min.cleanable.dirty.ratio": "0.01",
        "min.insync.replicas": str(min_insync),
    }


@contextlib.contextmanager
def _quiet_kafka_logs() -> Iterator[None]:
    """kafka-python logs every refused connection at WARNING/ERROR; while we poll a broker
    that is still starting that is noise."""
    logger = logging.getLogger("kafka")
    old = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(old)


def admin_client(bootstrap: str, *, timeout: float = 10.0, auth: KafkaAuth | None = None) -> KafkaAdminClient:
    """A connected KafkaAdminClient (raises kafka.errors.KafkaError if none answers)."""
    ms = max(1000, int(timeout * 1000))
    return KafkaAdminClient(
        bootstrap_servers=bootstrap,
        client_id="plylog-admin",
        request_timeout_ms=ms,
        bootstrap_timeout_ms=ms,
        **kafka_auth.kafka_python(auth or KafkaAuth.from_env()),
    )


@contextlib.contextmanager
def admin(bootstrap: str, *, timeout: float = 10.0, auth: KafkaAuth | None = None) -> Iterator[KafkaAdminClient]:
    try:
        client = admin_client(bootstrap, timeout=timeout, auth=auth)
    except KafkaError as exc:
        raise KafkaAdminError(f"no Kafka broker answers at {bootstrap}: {exc}") from exc
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close()


def metadata_answers(bootstrap: str, *, timeout: float = 2.0, auth: KafkaAuth | None = None) -> dict | None:
    """One metadata round trip: the cluster description, or None if no broker answers."""
    with _quiet_kafka_logs():
        try:
            client = admin_client(bootstrap, timeout=timeout, auth=auth)
        except Exception:  # noqa: BLE001 - any failure means "not ready"
            return None
        try:
            cluster = client.describe_cluster()
            return cluster if cluster.get("brokers") else None
        except Exception:  # noqa: BLE001 - any failure means no cluster yet
            return None
        finally:
            with contextlib.suppress(Exception):
                client.close()


def wait_for_metadata(bootstrap: str, timeout: float = 60.0, *, interval: float = 0.25, alive=None) -> dict:
    """Poll until a metadata request is answered; returns the cluster description.

    `alive`: optional callable; when it returns False (e.g. the broker process died) we
    stop waiting at once. Raises KafkaAdminError on timeout or death."""
    deadline = time.monotonic() + timeout
    while True:
        cluster = metadata_answers(bootstrap, timeout=min(2.0, max(0.5, timeout)))
        if cluster is not None:
            return cluster
        if alive is not None and not alive():
            raise KafkaAdminError(f"the broker for {bootstrap} exited while starting")
        if time.monotonic() >= deadline:
            raise KafkaAdminError(f"no Kafka broker answered a metadata request at {bootstrap} within {timeout:g}s")
        time.sleep(interval)


def create_topics(
    bootstrap: str,
    specs: Iterable[TopicSpec],
    *,
    timeout: float = 30.0,
    client: KafkaAdminClient | None = None,
    auth: KafkaAuth | None = None,
) -> dict[str, str]:
    """Create topics that do not exist. Returns {name: "created" | "exists"}; waits until
    every topic has a leader for every partition."""
    specs = list(specs)
    if not specs:
        return {}
    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(admin(bootstrap, timeout=timeout, auth=auth))
        new = [NewTopic(s.name, s.partitions, s.replication, topic_configs=dict(s.configs)) for s in specs]
        try:
            response = client.create_topics(new, timeout_ms=int(timeout * 1000), raise_errors=False)
        except KafkaError as exc:
            raise KafkaAdminError(f"creating topics at {bootstrap} failed: {exc}") from exc
        status: dict[str, str] = {}
        for t in _topic_results(response):
            code = t.get("error_code", 0)
            if code == 0:
                status[t["name"]] = "created"
            elif code == TOPIC_ALREADY_EXISTS:
                status[t["name"]] = "exists"
            else:
                raise KafkaAdminError(f"creating topic {t['name']} failed: error {code}: {t.get('error_message')}")
        _wait_for_leaders(client, [s.name for s in specs], timeout)
        return status


def _topic_results(response) -> list[dict]:
    if isinstance(response, dict):
        return list(response.get("topics", []))
    topics = getattr(response, "topics", None) or []
    out = []
    for t in topics:
        if isinstance(t, dict):
            out.append(t)
        else:
            out.append(
                {
                    "name": getattr(t, "name", None) or t[0],
                    "error_code": getattr(t, "error_code", 0),
                    "error_message": getattr(t, "error_message", None),
                }
            )
    return out


def _wait_for_leaders(client: KafkaAdminClient, names: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            described = client.describe_topics(names)
            if all(
                t.get("error_code", 0) == 0
                and t.get("partitions")
                and all(p.get("leader_id", -1) >= 0 for p in t["partitions"])
                for t in described
            ):
                return
        except KafkaError:
            pass
        if time.monotonic() >= deadline:
            raise KafkaAdminError(f"topics {names} have no leader after {timeout:g}s")
        time.sleep(0.1)


def ensure_contract_topics(
    bootstrap: str,
    prefix: str = DEFAULT_TOPIC_PREFIX,
    partitions: int = DEFAULT_PARTITIONS,
    retention_ms: int = FOREVER,
    *,
    timeout: float = 30.0,
    replication: int = 1,
    min_insync: int = 1,
    auth: KafkaAuth | None = None,
) -> dict[str, str]:
    """Create the four contract topics for `prefix` (those that are missing)."""
    return create_topics(
        bootstrap,
        contract_topic_specs(prefix, partitions, retention_ms, replication, min_insync),
        timeout=timeout,
        auth=auth,
    )


# In a cluster a topic just created reaches the other brokers' metadata a moment later; a service
# started right after `plylog up` (or after kcat or an operator made the topics) may ask one of those
# brokers first. Seen in CI: a worker refused to start, its topics "None", on a three-broker cluster.
TOPICS_SETTLE_S = 15.0


def partition_counts(
    bootstrap: str,
    names: Iterable[str],
    *,
    timeout: float = 10.0,
    wait_missing: float = 0.0,
    interval: float = 0.25,
    auth: KafkaAuth | None = None,
) -> dict[str, int | None]:
    """{topic: number of partitions}, None for a topic that does not exist. With `wait_missing`,
    asks again for up to that many seconds while a topic is missing (services pass TOPICS_SETTLE_S)."""
    names = list(names)
    deadline = time.monotonic() + wait_missing
    with admin(bootstrap, timeout=timeout, auth=auth) as client:
        while True:
            counts = _partition_counts(client, names)
            missing = [n for n, count in counts.items() if not count]
            if not missing or time.monotonic() >= deadline:
                return counts
            log.info("topic(s) %s not in the metadata of %s yet; asking again", ", ".join(missing), bootstrap)
            time.sleep(interval)


# A new broker makes its offsets topic (__consumer_offsets) when a client first asks for a group's
# coordinator, and answers "coordinator not available" until it has: aiokafka logs that at ERROR,
# so every fresh stack's rules worker started with an error line that was none (seen on `make run`).
def wait_for_group_coordinator(
    bootstrap: str, group: str, *, timeout: float = 30.0, interval: float = 0.1, auth: KafkaAuth | None = None
) -> float:
    """Ask for `group`'s coordinator until the cluster has one; returns the seconds waited.
    Raises KafkaAdminError when none is there within `timeout` or the broker answers an error that
    asking again cannot mend."""
    started = time.monotonic()
    with admin(bootstrap, timeout=min(timeout, 10.0), auth=auth) as client:
        while True:
            try:
                client.describe_groups([group])
                return time.monotonic() - started
            except KafkaError as error:
                if not getattr(error, "retriable", False):
                    raise KafkaAdminError(f"cannot find the coordinator of group {group}: {error}") from error
                if time.monotonic() - started >= timeout:
                    raise KafkaAdminError(f"no coordinator for group {group} within {timeout:g}s: {error}") from error
            time.sleep(interval)


def _partition_counts(client: KafkaAdminClient, names: list[str]) -> dict[str, int | None]:
    existing = set(client.list_topics())
    present = [n for n in names if n in existing]
    counts: dict[str, int | None] = {n: None for n in names}
    if present:
        for t in client.describe_topics(present):
            if t.get("error_code", 0) == 0:
                counts[t["name"]] = len(t.get("partitions") or [])
    return counts


def topic_configs(bootstrap: str, name: str, *, timeout: float = 10.0, auth: KafkaAuth | None = None) -> dict[str, str]:
    """The topic's explicitly set (dynamic) configs, e.g. {"retention.ms": "-1"}."""
    with admin(bootstrap, timeout=timeout, auth=auth) as client:
        result = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    if isinstance(result, dict):
        entries = result.get("topic", {}).get(name, {})
        return {k: v.get("value") if isinstance(v, dict) else v for k, v in entries.items()}
    raise KafkaAdminError(f"unexpected describe_configs answer for {name}: {result!r}")


def ensure_topic_configs(
    bootstrap: str, name: str, wanted: dict[str, str], *, timeout: float = 10.0, auth: KafkaAuth | None = None
) -> dict[str, str]:
    """Set `wanted` on an existing topic where it differs (a topic made by an older version);
    returns what was changed. Kafka's AlterConfigs replaces every dynamic config of the topic, so
    the ones set before and not named here are sent again unchanged."""
    current = {k: v for k, v in topic_configs(bootstrap, name, timeout=timeout, auth=auth).items() if v is not None}
    changed = {k: v for k, v in wanted.items() if current.get(k) != v}
    if changed:
        with admin(bootstrap, timeout=timeout, auth=auth) as client:
            # raise_on_unknown=False: kafka-python 3 first checks the names against the configs a
            # broker describes, and a broker that does not know a just-made topic yet knows none
            response = client.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, name, {**current, **wanted})], raise_on_unknown=False
            )
        for resource in getattr(response, "resources", []) or []:
            code, message = resource[0], resource[1]
            if code:
                raise KafkaAdminError(f"setting {changed} on topic {name} failed: error {code}: {message}")
    return changed


def delete_topics(
    bootstrap: str, names: Iterable[str], *, timeout: float = 30.0, auth: KafkaAuth | None = None
) -> None:
    """Delete topics, ignoring those that do not exist."""
    names = list(names)
    if not names:
        return
    with admin(bootstrap, timeout=timeout, auth=auth) as client:
        existing = set(client.list_topics())
        doomed = [n for n in names if n in existing]
        if doomed:
            try:
                client.delete_topics(doomed, timeout_ms=int(timeout * 1000), raise_errors=False)
            except KafkaError as exc:
                raise KafkaAdminError(f"deleting topics {doomed} failed: {exc}") from exc
