"""Where `plylog up --cluster` puts every node, derived from the configured port bases (see
services/common/settings.py): three Kafka nodes (combined broker + controller, KRaft), a Redis
Cluster of six nodes (three primaries, three replicas), and two of each plylog service."""

from __future__ import annotations

from dataclasses import dataclass

from services.common.settings import RedisTarget, Settings

BROKERS = 3
REDIS_NODES = 6
REDIS_REPLICAS = 1  # per primary: 3 primaries + 3 replicas
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
SERVICE_INSTANCES = 2  # rules workers, projectors and gateways each
REDIS_BUS_OFFSET = 10000  # Redis Cluster's bus port = client port + 10000


@dataclass(frozen=True)
class KafkaNode:
    node_id: int  # 1..3
    port: int
    controller_port: int

    @property
    def name(self) -> str:
        return f"kafka-{self.node_id}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass(frozen=True)
class RedisNode:
    number: int  # 1..6
    port: int

    @property
    def name(self) -> str:
        return f"redis-{self.number}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def bus_port(self) -> int:
        return self.port + REDIS_BUS_OFFSET


def kafka_nodes(s: Settings) -> list[KafkaNode]:
    return [KafkaNode(i + 1, s.kafka_port + 2 * i, s.controller_port + 2 * i) for i in range(BROKERS)]


def redis_nodes(s: Settings) -> list[RedisNode]:
    return [RedisNode(i + 1, s.redis_port + i) for i in range(REDIS_NODES)]


def bootstrap(s: Settings) -> str:
    return ",".join(node.address for node in kafka_nodes(s))


def voters(s: Settings) -> str:
    """controller.quorum.voters of the three nodes."""
    return ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in kafka_nodes(s))


def redis_url(s: Settings) -> str:
    return RedisTarget.cluster_of([("127.0.0.1", n.port) for n in redis_nodes(s)]).url


def all_ports(s: Settings) -> dict[int, str]:
    """Every port the cluster's infrastructure listens on -> what listens there."""
    ports: dict[int, str] = {}
    for k in kafka_nodes(s):
        ports[k.port] = f"{k.name} (broker)"
        ports[k.controller_port] = f"{k.name} (controller)"
    for r in redis_nodes(s):
        ports[r.port] = r.name
        ports[r.bus_port] = f"{r.name} (cluster bus)"
    return ports


def check_ports(s: Settings) -> None:
    """SettingsError when two nodes would share a port (bases too close together)."""
    from services.common.settings import SettingsError

    wanted = [(k.port, f"{k.name} (broker)") for k in kafka_nodes(s)]
    wanted += [(k.controller_port, f"{k.name} (controller)") for k in kafka_nodes(s)]
    wanted += [(r.port, r.name) for r in redis_nodes(s)] + [(r.bus_port, f"{r.name} (bus)") for r in redis_nodes(s)]
    wanted += [(s.gateway_port + i, f"gateway-{i + 1}") for i in range(SERVICE_INSTANCES)]
    seen: dict[int, str] = {}
    for port, what in wanted:
        if not 0 < port < 65536:
            raise SettingsError(f"{what} would listen on port {port}: choose lower port bases")
        if port in seen:
            raise SettingsError(
                f"{what} and {seen[port]} would both listen on port {port}: move "
                "PLYLOG_KAFKA_PORT, PLYLOG_KAFKA_CONTROLLER_PORT, PLYLOG_REDIS_PORT or "
                "PLYLOG_GATEWAY_PORT apart (see `plylog up --help`)"
            )
        seen[port] = what
