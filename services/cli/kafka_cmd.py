"""`plylog kafka-acls`: give each plylog service's Kafka user its ACLs on a cluster with an
authorizer, and with --topics make the contract topics first (what `plylog up --cluster` does for
its own cluster; the compose cluster file runs it)."""

from __future__ import annotations

import typer

from services.common.settings import Settings

from ._errors import CliError


def kafka_acls(
    show: bool = typer.Option(False, "--show", help="Print the ACLs and create nothing."),
    topics: bool = typer.Option(
        False,
        "--topics",
        help="First create the contract topics that are missing (PLYLOG_PARTITIONS, PLYLOG_RETENTION_MS, "
        "PLYLOG_REPLICATION_FACTOR, PLYLOG_MIN_INSYNC_REPLICAS).",
    ),
) -> None:
    """Create the ACLs of every plylog service's Kafka user for the topic prefix
    (PLYLOG_TOPIC_PREFIX) on KAFKA_BOOTSTRAP_SERVERS, logged in as PLYLOG_KAFKA_USERNAME (a super
    user, or one allowed to alter ACLs). Existing ACLs are left as they are. The users themselves
    (their SCRAM credentials) are made where the cluster is made. See docs/security/kafka.md."""
    from services.common import kafka_acls as acls
    from services.common import kafka_admin
    from services.common.kafka_admin import KafkaAdminError

    settings = Settings.from_env()
    grants = acls.grants(settings.topics)
    for grant in grants:
        kind = "prefix" if grant.prefixed else "literal"
        typer.echo(f"User:{grant.user}  {grant.resource} {grant.name} ({kind})  {', '.join(grant.operations)}")
    if show:
        return
    if settings.kafka_auth is None:
        raise CliError(
            "no Kafka user to create the ACLs with (PLYLOG_KAFKA_USERNAME is not set)",
            "set PLYLOG_KAFKA_USERNAME and PLYLOG_KAFKA_PASSWORD to a super user's",
        )
    try:
        if topics:
            made = kafka_admin.ensure_contract_topics(
                settings.kafka_bootstrap,
                settings.topic_prefix,
                settings.partitions,
                settings.retention_ms,
                timeout=120,
                replication=settings.replication_factor,
                min_insync=settings.min_insync_replicas,
                auth=settings.kafka_auth,
            )
            typer.echo(", ".join(f"{name}: {status}" for name, status in made.items()))
        count = acls.ensure(settings.kafka_bootstrap, settings.topics, auth=settings.kafka_auth, timeout=60)
    except KafkaAdminError as error:
        raise CliError(f"creating the ACLs at {settings.kafka_bootstrap} failed: {error}", "") from None
    typer.echo(f"{count} ACLs in place on {settings.kafka_bootstrap}, every broker has them")


def register(app: typer.Typer) -> None:
    app.command("kafka-acls")(kafka_acls)
