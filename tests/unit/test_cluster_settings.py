"""Settings of a cluster: REDIS_URL for a Redis Cluster, broker lists, replication, the local
cluster's port layout, and service instance names."""

import pytest

from services.cli._cluster_layout import bootstrap, check_ports, kafka_nodes, redis_nodes, redis_url, voters
from services.cli._services import by_name
from services.common.kafka_partition import partition_of
from services.common.redis_keys import OUTCOMES, Keys, home_partition
from services.common.settings import RedisTarget, Settings, SettingsError


def test_a_redis_cluster_url_names_its_nodes_and_a_plain_url_is_left_to_redis_py():
    target = RedisTarget.parse("redis+cluster://10.0.0.1:7000,redis-2:7001")
    assert target.cluster and target.nodes == (("10.0.0.1", 7000), ("redis-2", 7001))
    assert not RedisTarget.parse("redis://127.0.0.1:6379/3").cluster
    with pytest.raises(SettingsError, match="only database 0"):
        RedisTarget.parse("redis+cluster://h:1/2")
    with pytest.raises(SettingsError, match="is not host:port"):
        Settings.from_env({"REDIS_URL": "redis+cluster://h:1,nope"})


def test_broker_lists_and_replication():
    s = Settings.from_env(
        {"KAFKA_BOOTSTRAP_SERVERS": "a:1, b:2,c:3", "PLYLOG_REPLICATION_FACTOR": "3", "PLYLOG_MIN_INSYNC_REPLICAS": "2"}
    )
    assert s.kafka_servers == ["a:1", "b:2", "c:3"] and s.service_env()["PLYLOG_REPLICATION_FACTOR"] == "3"
    with pytest.raises(SettingsError, match="no write could succeed"):
        Settings.from_env({"PLYLOG_REPLICATION_FACTOR": "1", "PLYLOG_MIN_INSYNC_REPLICAS": "2"})


def test_the_local_cluster_derives_every_port_from_the_bases(tmp_path):
    s = Settings.from_env(
        {
            "PLYLOG_HOME": str(tmp_path),
            "PLYLOG_KAFKA_PORT": "19092",
            "PLYLOG_KAFKA_CONTROLLER_PORT": "19093",
            "PLYLOG_REDIS_PORT": "16379",
            "PLYLOG_GATEWAY_PORT": "18000",
        }
    )
    assert [(n.port, n.controller_port) for n in kafka_nodes(s)] == [(19092, 19093), (19094, 19095), (19096, 19097)]
    assert bootstrap(s) == "127.0.0.1:19092,127.0.0.1:19094,127.0.0.1:19096"
    assert voters(s) == "1@127.0.0.1:19093,2@127.0.0.1:19095,3@127.0.0.1:19097"
    assert [n.port for n in redis_nodes(s)] == list(range(16379, 16385))
    assert RedisTarget.parse(redis_url(s)).nodes[0] == ("127.0.0.1", 16379)
    check_ports(s)
    clash = Settings.from_env(
        {"PLYLOG_HOME": str(tmp_path), "PLYLOG_KAFKA_PORT": "19092", "PLYLOG_KAFKA_CONTROLLER_PORT": "19094"}
    )
    with pytest.raises(SettingsError, match="would both listen on port 19094"):
        check_ports(clash)


def test_numbered_instances_and_their_ports(tmp_path):
    s = Settings.from_env({"PLYLOG_HOME": str(tmp_path), "PLYLOG_GATEWAY_PORT": "18000"})
    specs = by_name()
    assert specs["rules"].instance_names(1) == ["rules-1"]
    assert specs["projector"].instance_names(1) == ["projector"]
    assert specs["gateway"].instance_names(2) == ["gateway-1", "gateway-2"]
    assert [specs["gateway"].port(s, i) for i in (1, 2)] == [18000, 18001]
    assert [specs["rules"].ops_port(s, i) for i in (1, 2)] == [18100, 18101]
    assert specs["projector"].ops_port(s, 2) == 18111
    assert specs["projector"].owns("projector-2") and specs["projector"].owns("projector")
    assert not specs["projector"].owns("projectors-2")


def test_a_match_keys_share_the_slot_of_its_home_partition():
    keys = Keys("plylog:", 12)
    home = partition_of(b"m-7f3a9c", 12)
    assert home_partition("m-7f3a9c", 12) == home == keys.home("m-7f3a9c")
    assert keys.match("m-7f3a9c") == f"plylog:match:{{{home}}}:m-7f3a9c"
    assert keys.match_log("m-7f3a9c").startswith(f"plylog:match:{{{home}}}:")
    assert keys.offsets("projector", home) == f"plylog:offsets:{{{home}}}:projector"
    assert keys.player("ann") == "plylog:player:{outcomes}:ann" and keys.offsets("p", OUTCOMES).endswith("{outcomes}:p")
    assert len(keys.all_offsets("projector")) == 13
    with pytest.raises(ValueError, match="braces"):
        Keys("my{prefix}:")
