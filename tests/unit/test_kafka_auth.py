"""Kafka credentials from the environment, each client library's arguments, the local cluster's
users file and the ACL table (the cluster itself: tests/cluster/test_cluster_auth.py)."""

from __future__ import annotations

import json
import stat

import pytest

from services.cli import _kafka_cluster
from services.common import kafka_acls, kafka_auth
from services.common.kafka_auth import KafkaAuth, KafkaAuthError
from services.common.settings import Settings, SettingsError, Topics

TOPICS = Topics("plylog.")


def test_no_user_is_an_open_broker_and_a_half_given_user_is_refused_with_the_reason():
    assert KafkaAuth.from_env({}) is None
    assert Settings.from_env({}).kafka_auth is None
    with pytest.raises(KafkaAuthError, match="PLYLOG_KAFKA_PASSWORD is empty"):
        KafkaAuth.from_env({"PLYLOG_KAFKA_USERNAME": "plylog-gateway"})
    with pytest.raises(KafkaAuthError, match="PLYLOG_KAFKA_USERNAME is not"):
        KafkaAuth.from_env({"PLYLOG_KAFKA_PASSWORD": "secret"})
    with pytest.raises(SettingsError, match="PLYLOG_KAFKA_SASL_MECHANISM='PLAIN'"):
        Settings.from_env(
            {"PLYLOG_KAFKA_USERNAME": "u", "PLYLOG_KAFKA_PASSWORD": "p", "PLYLOG_KAFKA_SASL_MECHANISM": "plain"}
        )


def test_the_password_is_never_shown_and_the_environment_round_trips():
    auth = KafkaAuth("plylog-rules", "s3cret-value")
    assert "s3cret" not in repr(auth) and "s3cret" not in repr(Settings.from_env(auth.env()))
    assert KafkaAuth.from_env(auth.env()) == auth
    assert Settings.from_env(auth.env()).kafka_auth == auth


def test_every_client_library_gets_the_same_four_settings_in_its_own_spelling():
    auth = KafkaAuth("u", "p", "SCRAM-SHA-256")
    python = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256"}
    assert kafka_auth.kafka_python(auth) == {**python, "sasl_plain_username": "u", "sasl_plain_password": "p"}
    assert kafka_auth.aiokafka(auth) == kafka_auth.kafka_python(auth)
    assert kafka_auth.librdkafka(auth) == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "u",
        "sasl.password": "p",
    }
    assert kafka_auth.kcat(auth)[:2] == ["-X", "security.protocol=SASL_PLAINTEXT"]
    credentials = kafka_auth.faust(auth)
    assert (credentials.username, credentials.password, credentials.mechanism.value) == ("u", "p", "SCRAM-SHA-256")
    for spell in (kafka_auth.kafka_python, kafka_auth.librdkafka, kafka_auth.kcat, kafka_auth.faust):
        assert not spell(None)  # an open broker: no arguments at all


def test_the_users_file_is_made_once_private_and_names_every_user(tmp_path):
    s = Settings.from_env({}, home=tmp_path)
    made = _kafka_cluster.passwords(s, make=True)
    assert stat.S_IMODE(_kafka_cluster.users_file(s).stat().st_mode) == 0o600
    assert set(made) == {*kafka_acls.SCRAM_USERS, kafka_acls.CONTROLLER} and len(set(made.values())) == len(made)
    assert _kafka_cluster.passwords(s, make=True) == made  # not made again
    arguments = " ".join(_kafka_cluster.scram_arguments(made))
    assert all(f"name={user}," in arguments for user in kafka_acls.SCRAM_USERS)
    assert kafka_acls.CONTROLLER not in arguments  # PLAIN only, on the controller listener
    _kafka_cluster.users_file(s).write_text(json.dumps({"plylog-gateway": "x"}))
    with pytest.raises(SettingsError, match="has no password for"):
        _kafka_cluster.passwords(s)


def test_the_cli_on_a_clusters_machine_reads_as_the_reader_and_only_there(tmp_path):
    s = Settings.from_env({}, home=tmp_path)
    users = _kafka_cluster.passwords(s, make=True)
    (tmp_path / "stack.json").write_text(json.dumps({"cluster": True}))
    env = {"PLYLOG_HOME": str(tmp_path)}
    _kafka_cluster.use_reader_credentials(env)
    assert KafkaAuth.from_env(env) == KafkaAuth("plylog-reader", users["plylog-reader"])
    given = {"PLYLOG_HOME": str(tmp_path), "PLYLOG_KAFKA_USERNAME": "me", "PLYLOG_KAFKA_PASSWORD": "mine"}
    _kafka_cluster.use_reader_credentials(given)
    assert given["PLYLOG_KAFKA_USERNAME"] == "me"  # the environment's own user wins
    (tmp_path / "stack.json").write_text(json.dumps({"cluster": False}))
    single = {"PLYLOG_HOME": str(tmp_path)}
    _kafka_cluster.use_reader_credentials(single)
    assert "PLYLOG_KAFKA_USERNAME" not in single  # the single-node broker is open


def test_the_rules_worker_alone_writes_what_it_derives_and_the_gateway_and_bots_only_moves():
    # the matchmaker and the tournament service write the creates of the matches they make
    assert kafka_acls.writers(TOPICS, TOPICS.moves) == [
        "plylog-bots",
        "plylog-gateway",
        "plylog-matchmaker",
        "plylog-tournaments",
    ]
    assert kafka_acls.writers(TOPICS, TOPICS.lobby) == ["plylog-gateway", "plylog-matchmaker"]
    assert kafka_acls.writers(TOPICS, TOPICS.tournaments) == ["plylog-gateway", "plylog-tournaments"]
    for derived in (TOPICS.results, TOPICS.outcomes, TOPICS.deadletter, TOPICS.rules_changelog):
        assert kafka_acls.writers(TOPICS, derived) in (["plylog-rules"], []), derived
    assert kafka_acls.writers(TOPICS, TOPICS.results) == ["plylog-rules"]
    readers_only = {"plylog-projector", "plylog-reader"}
    assert not any("WRITE" in g.operations for g in kafka_acls.grants(TOPICS) if g.user in readers_only)
    assert not any(
        op in g.operations for g in kafka_acls.grants(TOPICS) for op in ("DELETE", "ALTER", "CLUSTER_ACTION")
    )


def test_only_the_gateway_writes_players_keys_and_profiles_and_only_the_notifier_also_reads_them():
    for topic in (TOPICS.profiles, TOPICS.player_keys):
        found = {g.user: g.operations for g in kafka_acls.grants(TOPICS) if g.resource == "topic" and g.name == topic}
        assert set(found) == {"plylog-gateway", "plylog-notifier"}, topic  # never the reader (exports, audits)
        assert found["plylog-notifier"] == ("READ", "DESCRIBE")  # it opens contact addresses, writes nothing
        assert kafka_acls.writers(TOPICS, topic) == ["plylog-gateway"]
