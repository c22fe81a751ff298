"""Who may do what on a Kafka cluster with authorization on: one principal per plylog service and
the ACLs that give each what its clients do and nothing more (docs/security/kafka.md has the table).

    kafka_acls.ensure(bootstrap, topics, auth=operator)   # idempotent: creates what is missing

Every operation a service's clients make was read off its code: the gateway produces moves (its
own and the timekeeper's), reads moves (match history) and results (its early-results feed,
assign() only, no group); the bot service produces moves and reads results in its group; the rules
worker reads moves in its Faust group and writes results, outcomes, dead letters and Faust's own
topics (the changelog and the leader-election topic `<prefix>rules-__assignor-__leader`, which
Faust creates, hence CREATE on the prefix `<prefix>rules-`); the projector reads results and
outcomes in its group; the notifier reads results and outcomes (assign() only, no group: its
offsets are in Redis), and players' keys and profiles (to open their addresses), and writes nothing
to Kafka; a reader (exports, audits, `plylog rebuild`)
reads every contract topic; the gateway writes players' lobby records, and the matchmaker reads
and writes the lobby (its ticks; assign(), no group) and writes the creates of the matches it
makes to moves.
A WRITE grant includes the idempotent producer's InitProducerId (Kafka >= 2.8, KIP-679).
"""

from __future__ import annotations

from dataclasses import dataclass

from .kafka_auth import KafkaAuth
from .settings import Topics

#: service -> its Kafka user. The operator (`plylog up`: topics and ACLs), the brokers and the
#: controllers are super users (deploy/kafka/cluster-server.properties).
SERVICE_USERS = {
    "gateway": "plylog-gateway",
    "bots": "plylog-bots",
    "rules": "plylog-rules",
    "projector": "plylog-projector",
    "reader": "plylog-reader",
    "notifier": "plylog-notifier",
    "matchmaker": "plylog-matchmaker",
    "tournaments": "plylog-tournaments",
}
OPERATOR = "plylog-operator"
BROKER = "plylog-broker"  # inter-broker traffic (SCRAM on the client listener)
CONTROLLER = "plylog-controller"  # the KRaft controller listener (SASL/PLAIN, not in the metadata)
SUPER_USERS = (OPERATOR, BROKER, CONTROLLER)
#: users that authenticate with SCRAM (made at format time); the controller's is PLAIN only
SCRAM_USERS = (OPERATOR, BROKER, *SERVICE_USERS.values())


@dataclass(frozen=True)
class Grant:
    user: str
    resource: str  # "topic" | "group"
    name: str
    operations: tuple[str, ...]
    prefixed: bool = False


def grants(topics: Topics) -> list[Grant]:
    """Every ACL of one installation (one topic prefix)."""
    gateway, bots, rules, projector, reader = (
        SERVICE_USERS[n] for n in ("gateway", "bots", "rules", "projector", "reader")
    )
    notifier, matchmaker, director = (SERVICE_USERS[n] for n in ("notifier", "matchmaker", "tournaments"))
    write, read = ("WRITE", "DESCRIBE"), ("READ", "DESCRIBE")
    faust_topics = ("CREATE", "READ", "WRITE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")
    return [
        Grant(gateway, "topic", topics.moves, ("WRITE", "READ", "DESCRIBE")),
        Grant(gateway, "topic", topics.results, read),
        Grant(bots, "topic", topics.moves, write),
        Grant(bots, "topic", topics.results, read),
        Grant(bots, "group", topics.bots_group, read),
        Grant(rules, "topic", topics.moves, read),
        *(Grant(rules, "topic", name, write) for name in (topics.results, topics.outcomes, topics.deadletter)),
        Grant(rules, "topic", f"{topics.rules_group}-", faust_topics, prefixed=True),
        Grant(rules, "group", topics.rules_group, read),
        Grant(projector, "topic", topics.results, read),
        Grant(projector, "topic", topics.outcomes, read),
        Grant(projector, "group", f"{topics.prefix}projector", read, prefixed=True),
        *(Grant(reader, "topic", name, read) for name in topics.all()),
        Grant(reader, "group", f"{topics.prefix}reader", read, prefixed=True),  # `plylog rebuild`'s
        Grant(notifier, "topic", topics.results, read),  # partitions assigned, no group
        Grant(notifier, "topic", topics.outcomes, read),
        # the lobby: players' submissions through the gateway; the matchmaker folds it (assign(), no
        # group), writes its ticks to it and creates the matches it makes on moves
        Grant(gateway, "topic", topics.lobby, write),
        Grant(matchmaker, "topic", topics.lobby, ("WRITE", "READ", "DESCRIBE")),
        Grant(matchmaker, "topic", topics.moves, write),
        Grant(reader, "topic", topics.tournaments, read),
        # tournaments: the gateway writes people's records and reads results; the service folds the
        # topic (and writes ticks and fed-back outcomes), creates matches, reads outcomes
        Grant(gateway, "topic", topics.tournaments, write),
        Grant(director, "topic", topics.tournaments, ("WRITE", "READ", "DESCRIBE")),
        Grant(director, "topic", topics.moves, write),
        Grant(director, "topic", topics.outcomes, read),
        Grant(director, "group", topics.tournaments_group, read, prefixed=True),
        # personal data (docs/personal-data.md): only the gateway writes players' keys and sealed
        # profiles (it makes guests, keeps their contact addresses, erases them); the notifier reads
        # them (assign(), no group) to open an address when it sends; no reader, audit or export does
        *(Grant(gateway, "topic", name, ("WRITE", "READ", "DESCRIBE")) for name in topics.personal()),
        *(Grant(notifier, "topic", name, read) for name in topics.personal()),
    ]


def writers(topics: Topics, topic: str) -> list[str]:
    """The users that may produce to `topic` (besides the super users)."""
    topic_grants = (g for g in grants(topics) if g.resource == "topic" and g.name == topic)
    return sorted({g.user for g in topic_grants if "WRITE" in g.operations})


def ensure(bootstrap: str, topics: Topics, *, auth: KafkaAuth | None = None, timeout: float = 30.0) -> int:
    """Create the ACLs of `grants(topics)` (Kafka ignores one that exists); returns how many were
    asked for. Raises KafkaAdminError when the cluster refuses any."""
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern, ResourceType

    from .kafka_admin import KafkaAdminError, admin

    acls = []
    for grant in grants(topics):
        pattern = ResourcePattern(
            ResourceType.TOPIC if grant.resource == "topic" else ResourceType.GROUP,
            grant.name,
            ACLResourcePatternType.PREFIXED if grant.prefixed else ACLResourcePatternType.LITERAL,
        )
        for operation in grant.operations:
            acls.append(ACL(f"User:{grant.user}", "*", ACLOperation[operation], ACLPermissionType.ALLOW, pattern))
    with admin(bootstrap, timeout=timeout, auth=auth) as client:
        answer = client.create_acls(acls)
        if answer["failed"]:
            raise KafkaAdminError(f"creating {len(answer['failed'])} ACLs failed: {answer['failed'][0]!r}")
        _wait_until_every_broker_has(client, acls, timeout)
    return len(acls)


def _key(acl) -> tuple:
    pattern = acl.resource_pattern
    return (
        acl.principal,
        int(pattern.resource_type),
        pattern.resource_name,
        int(pattern.pattern_type),
        int(acl.operation),
    )


def _wait_until_every_broker_has(client, acls: list, timeout: float) -> None:
    """The controller has the ACLs once create_acls answers; each broker applies them from the
    metadata log a moment later, and until then refuses their users (seen: a producer started right
    after `ensure` was refused). Asks every broker for its ACLs until each has all of them. kafka-python
    asks one broker of its choosing (describe_acls): this sends the same request to each broker, through
    the client's own connection manager (as its describe_log_dirs does)."""
    import time

    from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType
    from kafka.protocol.admin import DescribeAclsRequest

    from .kafka_admin import KafkaAdminError

    wanted = {_key(acl) for acl in acls}
    request = DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=ACLResourcePatternType.ANY,
        principal_filter=None,
        host_filter=None,
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
    )
    manager = client._manager  # the only way to ask a given broker (see above)
    deadline = time.monotonic() + timeout
    for node in [b["broker_id"] for b in client.describe_cluster()["brokers"]]:
        while True:
            response = manager.run(manager.send, request, node)
            have = {_key(acl) for acl in client._convert_describe_acls_response_to_acls(response)[0]}
            if wanted <= have:
                break
            if time.monotonic() > deadline:
                raise KafkaAdminError(f"broker {node} lacks {len(wanted - have)} ACLs after {timeout:g}s")
            time.sleep(0.1)
