"""What may import what (docs/contributing.md, "The layout, and what may import what"), read from the
source: every import of every module of games/, schemas/, services/ and bench/, at module level or
inside a function or an `if TYPE_CHECKING:` block alike (a circle that only a late import breaks is
still a circle).

- no import circle, module by module, over the whole tree;
- schemas imports nothing of ours; games only schemas; services/common only games and schemas;
  a service (rules, projector, gateway, bots) only services/common, games and schemas;
- bench never imports the CLI (services.cli);
- only the CLI (and bench, which runs what it measures) starts a service: no other module names a
  service to run (`python -m services.<service>`);
- one Kafka layer: of the services, only services/common/kafka_*.py import a Kafka client library
  (docs/decisions/kafka-layer.md), but for the rules worker's Faust app and the projector's own
  librdkafka consumer (both reworked by the rules worker's part of issue 41).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("games", "schemas", "services", "bench")
SERVICES = ("rules", "projector", "gateway", "bots")
LAUNCHERS = ("services.cli", "bench")  # may name a service's module to run
KAFKA_CLIENTS = ("kafka", "aiokafka", "confluent_kafka", "faust", "mode")  # mode: Faust's service framework
KAFKA_LAYER = "services.common.kafka_"
KAFKA_CLIENT_USERS = (  # besides the layer (and bench, and the tests, which are no service)
    "services.rules",  # the Faust app: its adapter is the rules worker's (docs/decisions/faust.md)
    "services.projector.consumer",  # its librdkafka consumer (docs/decisions/projector-consumer.md)
    "services.projector.runner",  # catches that consumer's KafkaException
)
ALLOWED = {  # layer -> the layers of ours it may import (its own always)
    "schemas": set(),
    "games": {"schemas"},
    "services.common": {"schemas", "games"},
    **{f"services.{name}": {"schemas", "games", "services.common"} for name in SERVICES},
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            if "results" in path.relative_to(root).parts or "node_modules" in path.parts:
                continue
            found[_module_name(path, root)] = path
    return found


def _ours(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that `name` (a module, or a name inside one) is, or None."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports(root: Path) -> tuple[dict[str, Path], list[Import]]:
    modules = _modules(root)
    found: dict[tuple[str, str], Import] = {}
    for importer, path in modules.items():
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            for name in names:
                imported = _ours(name, modules)
                if imported is not None and imported != importer:
                    found.setdefault((importer, imported), Import(importer, imported, node.lineno))
    return modules, list(found.values())


def layer(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "services" and len(parts) > 1 else parts[0]


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as one circle's path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(_path_through(sorted(component), edges))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _path_through(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A short circle through the component's first module, a -> ... -> a (breadth first)."""
    start, members = component[0], set(component)
    came_from = {start: start}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(edges.get(node, set()) & members):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    return component


def broken_rules(found: list[Import]) -> Iterator[str]:
    for edge in found:
        source, target = layer(edge.importer), layer(edge.imported)
        if source == target or target == "services":
            continue
        where = f"{edge.importer} (line {edge.line}) imports {edge.imported}"
        if source in ALLOWED and target not in ALLOWED[source]:
            allowed = ", ".join(sorted(ALLOWED[source])) or "nothing of ours"
            yield f"{where}: {source} may import only {allowed}"
        elif source == "bench" and target == "services.cli":
            yield f"{where}: bench uses the services, not the CLI"


SERVICE_TO_RUN = re.compile(rf"^(-m )?services\.({'|'.join(SERVICES)})(\.__main__)?$")


def service_launches(modules: dict[str, Path]) -> Iterator[str]:
    """Modules outside the launchers that name a service's module as a string (what `python -m` runs)."""
    for module, path in modules.items():
        if module.startswith(LAUNCHERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SERVICE_TO_RUN.match(node.value):
                yield f"{module} (line {node.lineno}) names {node.value!r} to run: only the CLI starts services"


def kafka_client_imports(modules: dict[str, Path]) -> Iterator[str]:
    """Service modules outside the Kafka layer that import a Kafka client library."""
    for module, path in modules.items():
        if not module.startswith("services.") or module.startswith((KAFKA_LAYER, *KAFKA_CLIENT_USERS)):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name.split(".")[0] in KAFKA_CLIENTS:
                    yield f"{module} (line {node.lineno}) imports {name}: use services/common's Kafka layer"


@cache
def project() -> tuple[dict[str, Path], list[Import]]:
    return imports(REPO)


def test_the_tree_is_read():
    modules, found = project()
    assert {"games.match", "schemas.base", "services.gateway.app", "services.cli.main", "bench.runner"} <= set(modules)
    assert any(e.importer == "services.gateway.app" and e.imported == "services.gateway.resources" for e in found)
    assert any(e.importer == "services.cli.stack" and e.imported == "services.cli._up" for e in found)


def test_no_import_circle():
    modules, found = project()
    edges: dict[str, set[str]] = {module: set() for module in modules}
    for edge in found:
        edges[edge.importer].add(edge.imported)
    assert circles(edges) == [], "import circles: " + "; ".join(" -> ".join(c) for c in circles(edges))


def test_each_folder_imports_only_what_it_may():
    _, found = project()
    assert list(broken_rules(found)) == []


def test_only_the_cli_starts_services():
    modules, _ = project()
    assert list(service_launches(modules)) == []


def test_only_the_kafka_layer_imports_a_kafka_client():
    modules, _ = project()
    assert list(kafka_client_imports(modules)) == []


# --- the checks find what they look for ---------------------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    return tmp_path


def test_a_circle_through_a_late_import_is_found(tmp_path):
    root = _tree(
        tmp_path,
        {
            "services/__init__.py": "",
            "services/gateway/__init__.py": "",
            "services/gateway/app.py": "from . import api\n",
            "services/gateway/api.py": "def handler():\n    from .app import thing\n",
            "services/gateway/ops.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .api import x\n",
        },
    )
    modules, found = imports(root)
    edges: dict[str, set[str]] = {module: set() for module in modules}
    for edge in found:
        edges[edge.importer].add(edge.imported)
    assert circles(edges) == [["services.gateway.api", "services.gateway.app", "services.gateway.api"]]


@pytest.mark.parametrize(
    "importer,source,allowed",
    [
        ("schemas/base.py", "from games import match\n", False),
        ("games/match.py", "import services.common.settings\n", False),
        ("games/match.py", "from schemas.base import X\n", True),
        ("services/common/x.py", "from services.gateway.app import create_app\n", False),
        ("services/gateway/x.py", "from services.projector import store\n", False),
        ("services/gateway/x.py", "from services.common import heap\n", True),
        ("services/cli/x.py", "from services.gateway import app\n", True),
        ("bench/x.py", "from services.cli._proc import free_port\n", False),
        ("bench/x.py", "from services.gateway.submit import move_record\n", True),
    ],
)
def test_the_rules_are_checked(tmp_path, importer, source, allowed):
    root = _tree(
        tmp_path,
        {
            "schemas/base.py": "",
            "games/match.py": "",
            "services/__init__.py": "",
            "services/common/heap.py": "",
            "services/common/settings.py": "",
            "services/gateway/app.py": "",
            "services/gateway/submit.py": "",
            "services/projector/store.py": "",
            "services/cli/_proc.py": "",
            importer: source,
        },
    )
    _, found = imports(root)
    assert (list(broken_rules(found)) == []) is allowed


def test_a_service_starting_another_is_found(tmp_path):
    root = _tree(tmp_path, {"services/bots/x.py": 'ARGV = ["python", "-m", "services.rules"]\n'})
    assert len(list(service_launches(_modules(root)))) == 1
    root = _tree(tmp_path, {"services/bots/x.py": 'LOG = "services.rules is slow"\n'})
    assert list(service_launches(_modules(root))) == []


def test_a_kafka_client_outside_the_layer_is_found(tmp_path):
    root = _tree(
        tmp_path,
        {
            "services/gateway/x.py": "def f():\n    from aiokafka import AIOKafkaProducer\n",
            "services/common/kafka_produce.py": "from aiokafka import AIOKafkaProducer\n",
            "services/bots/y.py": "import confluent_kafka.admin\nfrom .kafka import z\n",
        },
    )
    assert sorted(kafka_client_imports(_modules(root))) == [
        "services.bots.y (line 1) imports confluent_kafka.admin: use services/common's Kafka layer",
        "services.gateway.x (line 2) imports aiokafka: use services/common's Kafka layer",
    ]
