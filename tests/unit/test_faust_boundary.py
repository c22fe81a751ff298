"""Only the Faust adapter (services/rules/faust_adapter/) reads or writes a private attribute of
Faust (faust, mode) or aiokafka: anywhere else in the project's code, `obj._name` where `_name` is
one of theirs is refused, as are getattr/setattr/hasattr/delattr with such a name, and `self._name`
in a class that subclasses one of theirs. Private names are what those packages' own sources
spell with one leading underscore; the project's own `self._x` in its own classes is its business.
"""

from __future__ import annotations

import ast
import functools
import importlib.machinery
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("faust", "mode", "aiokafka")
ADAPTER = REPO / "services" / "rules" / "faust_adapter"
#: where Faust's and aiokafka's objects can be (games/ and schemas/ import neither, nor services/)
PROJECT = ("services", "bench")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def framework_private_names() -> frozenset[str]:
    """Every `_name` the frameworks' sources define or use as an attribute, or define in a class."""
    names: set[str] = set()
    for package in FRAMEWORKS:
        spec = importlib.machinery.PathFinder.find_spec(package)  # from sys.path: another test may stub it
        assert spec is not None and spec.submodule_search_locations, f"{package} is not installed"
        for root in spec.submodule_search_locations:
            for path in Path(root).rglob("*.py"):
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8", errors="replace"))):
                    if isinstance(node, ast.Attribute) and _private(node.attr):
                        names.add(node.attr)
                    elif isinstance(node, ast.ClassDef):
                        for item in node.body:
                            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name):
                                names.add(item.name)
    return frozenset(names)


def _framework_names(tree: ast.Module) -> set[str]:
    """The names this module binds to the frameworks (`import faust`, `from aiokafka import X`)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] in FRAMEWORKS}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FRAMEWORKS:
            bound |= {a.asname or a.name for a in node.names}
    return bound


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def violations(source: str, where: str = "<source>") -> list[str]:
    """`where:line: what` for every private attribute of the frameworks this source touches."""
    tree = ast.parse(source)
    private, framework = framework_private_names(), _framework_names(tree)
    found = []

    def visit(node: ast.AST, subclass: bool) -> None:
        if isinstance(node, ast.ClassDef):
            subclass = any(_root(base) in framework for base in node.bases)
        if isinstance(node, ast.Attribute) and node.attr in private:
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if owner not in ("self", "cls") or subclass:
                found.append(f"{where}:{node.lineno}: .{node.attr}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private
        ):
            found.append(f"{where}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
        for child in ast.iter_child_nodes(node):
            visit(child, subclass)

    visit(tree, False)
    return found


def project_modules() -> list[Path]:
    return sorted(
        path
        for top in PROJECT
        if (REPO / top).is_dir()
        for path in (REPO / top).rglob("*.py")
        if ADAPTER not in path.parents and "node_modules" not in path.parts
    )


def test_no_module_outside_the_faust_adapter_touches_a_private_attribute_of_faust_or_aiokafka():
    found = [v for path in project_modules() for v in violations(path.read_text(), str(path.relative_to(REPO)))]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "def f(app):\n    return app.consumer._commit({})",
        "def f(app):\n    app.producer._producer = None",
        "def f(consumer):\n    return getattr(consumer, '_drain_messages')",
        "import faust\nclass T(faust.Table):\n    def f(self):\n        return self._changelog_topic",
        "from aiokafka import AIOKafkaConsumer as C\nclass D(C):\n    def f(self):\n        return self._fetcher",
    ],
)
def test_the_check_finds_a_private_attribute_read_or_written(source):
    assert violations(source)


def test_the_check_leaves_a_class_its_own_private_attributes():
    assert violations("class Buffer:\n    def f(self):\n        return self._records, self._consumer") == []


def test_the_frameworks_private_names_include_those_the_adapter_reads():
    assert {"_commit", "_drain_messages", "_linger_time", "_fetcher", "_acked", "_gap"} <= framework_private_names()
