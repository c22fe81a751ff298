"""A Kafka client's credentials (SASL/SCRAM) and the keyword arguments each client library takes.

plylog talks to Kafka through four client libraries; each spells the same four settings its own
way. A service builds its clients with the helper of its library, so no client is made without
them:

    KafkaProducer(bootstrap_servers=..., **kafka_auth.kafka_python(settings.kafka_auth))
    AIOKafkaProducer(bootstrap_servers=..., **kafka_auth.aiokafka(settings.kafka_auth))
    confluent_kafka.Consumer({"bootstrap.servers": ..., **kafka_auth.librdkafka(settings.kafka_auth)})
    faust.App(..., broker_credentials=kafka_auth.faust(settings.kafka_auth))
    kcat -b ... *kafka_auth.kcat(settings.kafka_auth)

`None` (no PLYLOG_KAFKA_USERNAME): a PLAINTEXT connection with no identity, as the single-node
stack's open loopback broker takes it. The password never appears in a repr or a log line.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
DEFAULT_MECHANISM = "SCRAM-SHA-512"
#: SCRAM never sends the password, but the records themselves travel unencrypted (see
#: docs/security/kafka.md: what the listeners do not protect).
SECURITY_PROTOCOL = "SASL_PLAINTEXT"


class KafkaAuthError(ValueError):
    """The Kafka credentials in the environment cannot be used (the message says which and why)."""


@dataclass(frozen=True)
class KafkaAuth:
    username: str
    password: str = field(repr=False)
    mechanism: str = DEFAULT_MECHANISM

    def __post_init__(self) -> None:
        if not self.username or not self.password:
            raise KafkaAuthError("a Kafka user needs a name and a password")
        if self.mechanism not in MECHANISMS:
            raise KafkaAuthError(f"SASL mechanism {self.mechanism!r} is not one of {', '.join(MECHANISMS)}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> KafkaAuth | None:
        """PLYLOG_KAFKA_USERNAME, PLYLOG_KAFKA_PASSWORD and PLYLOG_KAFKA_SASL_MECHANISM; None when
        no user is named (an open broker)."""
        env = os.environ if env is None else env
        user = env.get("PLYLOG_KAFKA_USERNAME", "").strip()
        password = env.get("PLYLOG_KAFKA_PASSWORD", "")
        mechanism = env.get("PLYLOG_KAFKA_SASL_MECHANISM", "").strip().upper() or DEFAULT_MECHANISM
        if not user:
            if password:
                raise KafkaAuthError("PLYLOG_KAFKA_PASSWORD is set but PLYLOG_KAFKA_USERNAME is not: name the user")
            return None
        if not password:
            raise KafkaAuthError(
                f"PLYLOG_KAFKA_USERNAME={user} is set but PLYLOG_KAFKA_PASSWORD is empty: give the user's password"
            )
        if mechanism not in MECHANISMS:
            raise KafkaAuthError(f"PLYLOG_KAFKA_SASL_MECHANISM={mechanism!r} is not one of {', '.join(MECHANISMS)}")
        return cls(user, password, mechanism)

    def env(self) -> dict[str, str]:
        """The environment that gives a process these credentials (`from_env` reads it back)."""
        return {
            "PLYLOG_KAFKA_USERNAME": self.username,
            "PLYLOG_KAFKA_PASSWORD": self.password,
            "PLYLOG_KAFKA_SASL_MECHANISM": self.mechanism,
        }


def kafka_python(auth: KafkaAuth | None) -> dict[str, Any]:
    """kafka-python's KafkaProducer/KafkaConsumer/KafkaAdminClient keyword arguments."""
    if auth is None:
        return {}
    # kafka-python warns "Exchanging credentials in the clear" at every SCRAM login over
    # SASL_PLAINTEXT: untrue of SCRAM (a proof goes over the wire, never the password), and one
    # line per connection drowned the services' logs.
    logging.getLogger("kafka.net.sasl.scram").setLevel(logging.ERROR)
    return {
        "security_protocol": SECURITY_PROTOCOL,
        "sasl_mechanism": auth.mechanism,
        "sasl_plain_username": auth.username,
        "sasl_plain_password": auth.password,
    }


def aiokafka(auth: KafkaAuth | None) -> dict[str, Any]:
    """aiokafka's AIOKafkaProducer/AIOKafkaConsumer keyword arguments (the same names as kafka-python's)."""
    return kafka_python(auth)


def librdkafka(auth: KafkaAuth | None) -> dict[str, Any]:
    """confluent-kafka's (librdkafka's) configuration properties."""
    if auth is None:
        return {}
    return {
        "security.protocol": SECURITY_PROTOCOL,
        "sasl.mechanisms": auth.mechanism,  # the name every librdkafka knows (sasl.mechanism is a newer alias)
        "sasl.username": auth.username,
        "sasl.password": auth.password,
    }


def kcat(auth: KafkaAuth | None) -> list[str]:
    """kcat's `-X property=value` arguments (kcat is librdkafka: the same properties)."""
    return [arg for name, value in librdkafka(auth).items() for arg in ("-X", f"{name}={value}")]


def faust(auth: KafkaAuth | None) -> Any:
    """Faust's `broker_credentials` (its aiokafka driver turns them into aiokafka's arguments)."""
    if auth is None:
        return None
    import faust as _faust

    return _faust.SASLCredentials(username=auth.username, password=auth.password, mechanism=auth.mechanism)
