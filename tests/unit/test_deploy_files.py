"""The deploy files (deploy/compose/*.yml, deploy/kubernetes/**/*.yaml) are not run here (no Docker,
no Kubernetes), so they are checked against the code: every setting they give a plylog container is
one the code reads, every port they open or probe is one the service listens on, every probe path
one it serves, every topic one the contract names, every module one that exists. A setting renamed
in the code, or a port or topic changed, fails here instead of drifting silently."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from services.common import kafka_acls, kafka_admin
from services.common.settings import RedisTarget, Topics

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
COMPOSE = sorted((DEPLOY / "compose").glob("*.yml"))
KUBERNETES = sorted((DEPLOY / "kubernetes").rglob("*.yaml"))
CONTRACT = Topics("plylog.")
PROBE_PATHS = {"/livez", "/readyz", "/healthz", "/metrics"}
DEFAULT_GATEWAY_PORT = 8000


NAME = r"""["']((?:PLYLOG|KAFKA|REDIS)_[A-Z0-9_]+)["']"""
#: the ways services/ read an environment variable: env.get("X"), environ["X"], env_number(env, "X"),
#: the keys (_key(home, env, "X", ...), secret_key(settings.home, os.environ, "X", ...)), paths (_path(env, "X"))
#: and typer options (envvar="X")
READS = re.compile(
    r"(?:environ|env)(?:\.get\(|\[)\s*"
    + NAME
    + r"|env_number\(\s*[\w.]+,\s*"
    + NAME
    + r"|_key\(\s*[\w.]+,\s*[\w.]+,\s*"
    + NAME
    + r"|_path\(\s*[\w.]+,\s*"
    + NAME
    + r"|envvar="
    + NAME
)


def settings_the_code_reads() -> set[str]:
    """Every environment variable name the services and the CLI read (not merely set)."""
    names = set()
    for path in (REPO / "services").rglob("*.py"):
        for found in READS.finditer(path.read_text()):
            names.update(name for name in found.groups() if name)
    return names


def test_the_reads_are_found():
    read = settings_the_code_reads()
    assert {
        "KAFKA_BOOTSTRAP_SERVERS",
        "REDIS_URL",
        "PLYLOG_SECRET",
        "PLYLOG_OPS_PORT",
        "PLYLOG_RATE_PER_S",
        "PLYLOG_HOME",
        "PLYLOG_DATA_DIR",
        "PLYLOG_BOT_SECRET",
    } <= read
    assert "PLYLOG_SERVICE" not in read  # set by `plylog up` for information; no service reads it


def routes_the_code_serves() -> set[str]:
    paths = set()
    for path in (REPO / "services").rglob("*.py"):
        paths |= set(re.findall(r"""["'](/(?:livez|readyz|healthz|metrics))["']""", path.read_text()))
    return paths


def docs(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


# --- what the files give plylog's own containers ------------------------------------------------------
def compose_plylog_services() -> list[tuple[str, str, dict]]:
    """(file, service name, service) of every compose service running the plylog image."""
    found = []
    for path in COMPOSE:
        for name, service in docs(path)[0]["services"].items():
            if str(service.get("image", "")).startswith("plylog:"):
                found.append((path.name, name, service))
    return found


def kubernetes_objects() -> list[tuple[str, dict]]:
    return [(path.relative_to(DEPLOY).as_posix(), doc) for path in KUBERNETES for doc in docs(path)]


def config_maps() -> dict[str, dict]:
    return {
        doc["metadata"]["name"]: {**doc.get("data", {}), **doc.get("stringData", {})}
        for _, doc in kubernetes_objects()
        if doc["kind"] in ("ConfigMap", "Secret")
    }


def kubernetes_plylog_containers() -> list[tuple[str, dict, dict]]:
    """(where, container, its environment with envFrom resolved) of every plylog container."""
    maps, found = config_maps(), []
    for where, doc in kubernetes_objects():
        spec = doc.get("spec", {}).get("template", {}).get("spec", {})
        for container in spec.get("containers", []):
            if not str(container.get("image", "")).startswith("plylog:"):
                continue
            env = {}
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef") or source.get("secretRef")
                assert ref["name"] in maps, f"{where}: {ref['name']} is not defined in deploy/kubernetes"
                env.update(maps[ref["name"]])
            env.update({e["name"]: e.get("value") for e in container.get("env", [])})
            found.append((f"{where} {doc['metadata']['name']}/{container['name']}", container, env))
    return found


def test_there_is_something_to_check():
    assert len(compose_plylog_services()) >= 8 and len(kubernetes_plylog_containers()) == 6


def test_every_setting_given_to_a_plylog_container_is_one_the_code_reads():
    read = settings_the_code_reads()
    given: list[tuple[str, str]] = []
    for file, name, service in compose_plylog_services():
        given += [(f"{file} {name}", var) for var in service.get("environment", {})]
    for where, container, env in kubernetes_plylog_containers():
        substituted = set(re.findall(r"\$\(([A-Z_]+)\)", " ".join(container.get("args", []))))
        given += [(where, var) for var in env if var not in substituted]
    unknown = sorted({f"{where}: {var}" for where, var in given if var not in read})
    assert not unknown, "settings no code reads (renamed? misspelt?):\n" + "\n".join(unknown)


def test_every_gateway_of_a_deployment_reads_one_kept_keyring():
    """The receipts' keyring is per deployment: gateways that each made their own would publish
    different keys (GET /v1/keys), and one lost with its container would orphan its signatures."""
    for file in {file for file, _, _ in compose_plylog_services()}:
        gateways = [
            s for f, _, s in compose_plylog_services() if f == file and module_of(s["command"]) == "services.gateway"
        ]
        places = {(s["environment"].get("PLYLOG_RECEIPT_KEYS_DIR"), tuple(s.get("volumes", []))) for s in gateways}
        assert len(places) == 1, f"{file}: the gateways' keyrings differ: {places}"
        ((keys_dir, volumes),) = places
        assert keys_dir and any(v.split(":")[1] == keys_dir and not v.startswith("/") for v in volumes), (
            f"{file}: the gateways' PLYLOG_RECEIPT_KEYS_DIR is not on a named volume"
        )
        assert f"install -d -o plylog -g plylog -m 0700 {keys_dir}" in (DEPLOY / "compose" / "Dockerfile").read_text()
    gid = re.search(r"groupadd --system --gid (\d+) plylog", (DEPLOY / "compose" / "Dockerfile").read_text())
    for where, doc in kubernetes_objects():
        pod = doc.get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("containers", []):
            if container.get("command", [])[:3] != ["python", "-m", "services.gateway"]:
                continue
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            assert env.get("PLYLOG_RECEIPT_KEYS_DIR") in mounts, f"{where}: its keyring is not on a shared volume"
            volume = next(v for v in pod["volumes"] if v["name"] == mounts[env["PLYLOG_RECEIPT_KEYS_DIR"]])
            # the image runs as a non-root user: the Secret's files must be readable by its group
            assert gid and pod.get("securityContext", {}).get("fsGroup") == int(gid[1]), where
            assert volume["secret"]["defaultMode"] & 0o040, f"{where}: the keyring is not group-readable"


def listening_ports(env: dict, module: str) -> set[int]:
    """The ports a plylog service listens on with this environment."""
    ports = set()
    if module == "services.gateway":
        ports.add(int(env.get("PLYLOG_GATEWAY_PORT", DEFAULT_GATEWAY_PORT)))
    elif module in ("services.bots", "services.matchmaker", "services.tournaments"):
        pass  # serves no HTTP
    elif env.get("PLYLOG_OPS_PORT"):
        ports.add(int(env["PLYLOG_OPS_PORT"]))
    return ports


def module_of(command: list[str]) -> str:
    assert command[:2] == ["python", "-m"], command
    return command[2]


def test_compose_ports_and_probes_are_what_the_services_listen_on_and_serve():
    routes = routes_the_code_serves()
    for file, name, service in compose_plylog_services():
        module = module_of(service["command"])
        assert importlib.util.find_spec(module) is not None, f"{file} {name}: no module {module}"
        listening = listening_ports(service["environment"], module)
        for mapping in service.get("ports", []):
            assert int(str(mapping).rsplit(":", 1)[1]) in listening, (
                f"{file} {name}: {mapping} opens a port it does not listen on"
            )
        probe = " ".join(service.get("healthcheck", {}).get("test", []))
        for port, path in re.findall(r"127\.0\.0\.1:(\d+)(/[a-z]+)", probe):
            assert int(port) in listening and path in routes, f"{file} {name}: healthcheck {port}{path}"


def test_kubernetes_ports_and_probes_are_what_the_services_listen_on_and_serve():
    routes = routes_the_code_serves()
    for where, container, env in kubernetes_plylog_containers():
        module = module_of(container["command"])
        assert importlib.util.find_spec(module) is not None, f"{where}: no module {module}"
        listening = listening_ports(env, module)
        named = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
        assert set(named.values()) == listening, f"{where}: ports {named} but it listens on {listening}"
        if not listening:  # the bot service: nothing to probe
            assert "livenessProbe" not in container and "readinessProbe" not in container, where
            continue
        for kind in ("livenessProbe", "readinessProbe"):
            probe = container[kind]["httpGet"]
            assert named.get(probe["port"], probe["port"]) in listening, f"{where}: {kind} on {probe['port']}"
            assert probe["path"] in routes, f"{where}: {kind} path {probe['path']} is not served"
        assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_kubernetes_services_target_ports_their_pods_open():
    objects = kubernetes_objects()
    for where, service in objects:
        if service["kind"] != "Service":
            continue
        pods = [
            doc
            for _, doc in objects
            if doc["kind"] in ("Deployment", "StatefulSet")
            and doc["spec"]["template"]["metadata"]["labels"].items() >= service["spec"]["selector"].items()
        ]
        assert pods, f"{where}: Service {service['metadata']['name']} selects no pods"
        opened = {
            p.get("name")
            for doc in pods
            for c in doc["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        } | {
            p["containerPort"]
            for doc in pods
            for c in doc["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for port in service["spec"]["ports"]:
            assert port.get("targetPort", port["port"]) in opened, f"{where}: {port}"


def test_the_rules_workers_have_a_disruption_budget():
    budgets = [doc for _, doc in kubernetes_objects() if doc["kind"] == "PodDisruptionBudget"]
    rules = [
        doc for _, doc in kubernetes_objects() if doc["kind"] == "StatefulSet" and doc["metadata"]["name"] == "rules"
    ]
    assert rules and any(
        b["spec"]["selector"]["matchLabels"] == rules[0]["spec"]["selector"]["matchLabels"] for b in budgets
    )


# --- topics and infrastructure ------------------------------------------------------------------------
def test_strimzi_topics_are_the_contract_topics_with_three_replicas():
    topics = {
        doc["spec"].get("topicName", doc["metadata"]["name"]): doc["spec"]
        for _, doc in kubernetes_objects()
        if doc["kind"] == "KafkaTopic"
    }
    assert sorted(topics) == sorted([*CONTRACT.all(), *CONTRACT.personal()])
    for name in CONTRACT.personal():  # the bound on a deleted key's life, as `plylog up` sets it
        wanted = kafka_admin.personal_topic_configs(kafka_admin.ERASURE_STEP_MS, 2)
        assert {k: str(v) for k, v in topics[name]["config"].items()} == wanted and topics[name]["partitions"] == 1
    assert topics[CONTRACT.outcomes]["partitions"] == 1
    assert topics[CONTRACT.moves]["partitions"] == topics[CONTRACT.results]["partitions"]
    assert topics[CONTRACT.moves]["config"]["retention.ms"] == -1
    for spec in topics.values():
        assert spec["replicas"] == 3 and spec["config"]["min.insync.replicas"] == 2
    pools = [doc for _, doc in kubernetes_objects() if doc["kind"] == "KafkaNodePool"]
    assert sum(p["spec"]["replicas"] for p in pools) == 3


@pytest.mark.parametrize("path", [p for p in COMPOSE if "cluster" not in p.name], ids=lambda p: p.name)
def test_compose_topic_init_makes_exactly_the_contract_topics(path):
    command = " ".join(docs(path)[0]["services"]["topic-init"]["command"])
    made = re.findall(r"^\s*t (\w+)\s", command, re.M)
    assert sorted(f"plylog.{name}" for name in made) == sorted([*CONTRACT.all(), CONTRACT.tournaments])
    assert re.search(r"^\s*t outcomes\s+1\s", command, re.M)
    personal = re.findall(r"^\s*c ([\w-]+)\s*$", command, re.M)
    assert sorted(f"plylog.{name}" for name in personal) == sorted(CONTRACT.personal())
    for key, value in kafka_admin.personal_topic_configs(kafka_admin.ERASURE_STEP_MS).items():
        assert key == "min.insync.replicas" or f"--config {key}={value}" in command, key


def test_the_compose_cluster_is_the_layout_of_plylog_up_cluster():
    services = docs(DEPLOY / "compose" / "docker-compose.cluster.yml")[0]["services"]
    kafka = [n for n in services if re.fullmatch(r"kafka-\d", n)]
    redis = [n for n in services if re.fullmatch(r"redis-\d", n)]
    assert len(kafka) == 3 and len(redis) == 6
    init = " ".join(services["redis-cluster-init"]["command"])
    assert "--cluster-replicas 1" in init
    # the topics and ACLs as `plylog up --cluster` makes them: plylog's own code, as the operator
    kafka_init = services["kafka-init"]
    assert kafka_init["command"] == ["python", "-m", "services.cli.main", "kafka-acls", "--topics"]
    assert kafka_init["environment"]["PLYLOG_KAFKA_USERNAME"] == "plylog-operator"
    assert kafka_init["environment"]["PLYLOG_REPLICATION_FACTOR"] == "3"
    plylog = {name: s for file, name, s in compose_plylog_services() if file == "docker-compose.cluster.yml"}
    for module in ("services.rules", "services.projector", "services.gateway"):
        assert sum(module_of(s["command"]) == module for s in plylog.values()) == 2, module
    secrets = {(s["environment"]["PLYLOG_SECRET"], s["environment"]["PLYLOG_OPERATOR_KEY"]) for s in plylog.values()}
    assert len(secrets) == 1  # one secret and one operator key for every gateway
    for s in plylog.values():
        assert RedisTarget.parse(s["environment"]["REDIS_URL"]).cluster
        assert len(s["environment"]["KAFKA_BOOTSTRAP_SERVERS"].split(",")) == 3
    users = {
        module_of(s["command"]): s["environment"]["PLYLOG_KAFKA_USERNAME"]
        for s in plylog.values()
        if module_of(s["command"]) != "services.cli.main"  # kafka-init, the operator (above)
    }
    assert users == {f"services.{name}": user for name, user in kafka_acls.SERVICE_USERS.items() if name != "reader"}
    node = services["kafka-1"]
    assert "/plylog-kafka/cluster-server.properties" in " ".join(node["command"])  # the same node config
    assert "--add-scram" in " ".join(node["command"])


def test_kubernetes_settings_point_at_the_example_kafka_and_redis_cluster():
    config = config_maps()["plylog-config"]
    target = RedisTarget.parse(config["REDIS_URL"])
    assert target.cluster and all(host.startswith("redis-cluster-") for host, _ in target.nodes)
    kafka = next(doc for _, doc in kubernetes_objects() if doc["kind"] == "Kafka")
    assert config["KAFKA_BOOTSTRAP_SERVERS"].startswith(f"{kafka['metadata']['name']}-kafka-bootstrap")
    assert config["PLYLOG_REPLICATION_FACTOR"] == "3" and config["PLYLOG_MIN_INSYNC_REPLICAS"] == "2"


def test_the_strimzi_users_have_exactly_the_acls_plylog_up_cluster_creates():
    from services.common import kafka_acls

    users = {doc["metadata"]["name"]: doc for _, doc in kubernetes_objects() if doc["kind"] == "KafkaUser"}
    assert set(users) == set(kafka_acls.SERVICE_USERS.values())
    expected: dict[str, set] = {user: set() for user in users}
    for grant in kafka_acls.grants(CONTRACT):
        pattern = "prefix" if grant.prefixed else "literal"
        expected[grant.user] |= {(grant.resource, grant.name, pattern, op) for op in grant.operations}
    for name, doc in users.items():
        spec = doc["spec"]
        assert spec["authentication"]["type"] == "scram-sha-512" and spec["authorization"]["type"] == "simple"
        got = {
            (acl["resource"]["type"], acl["resource"]["name"], acl["resource"]["patternType"], _upper(op))
            for acl in spec["authorization"]["acls"]
            for op in acl["operations"]
        }
        assert got == expected[name], name
    kafka = next(doc for _, doc in kubernetes_objects() if doc["kind"] == "Kafka")["spec"]["kafka"]
    assert all(listener["authentication"]["type"] == "scram-sha-512" for listener in kafka["listeners"])
    assert kafka["authorization"]["type"] == "simple"


def _upper(strimzi_operation: str) -> str:
    """Strimzi's DescribeConfigs is Kafka's DESCRIBE_CONFIGS."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", strimzi_operation).upper()


def test_each_plylog_pod_logs_in_to_kafka_as_its_own_user():
    from services.common import kafka_acls

    service_of = {
        "services.gateway": "gateway",
        "services.bots": "bots",
        "services.rules": "rules",
        "services.matchmaker": "matchmaker",
        "services.tournaments": "tournaments",
    }
    for where, container, env in kubernetes_plylog_containers():
        service = service_of.get(module_of(container["command"]), "projector")
        user = kafka_acls.SERVICE_USERS[service]
        assert env.get("PLYLOG_KAFKA_USERNAME") == user, where
        password = next(e for e in container["env"] if e["name"] == "PLYLOG_KAFKA_PASSWORD")
        assert password["valueFrom"]["secretKeyRef"] == {"name": user, "key": "password"}, where
