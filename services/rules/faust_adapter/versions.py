"""The versions of Faust and aiokafka the adapter's workarounds were tested with.

Every workaround (the package's docstring lists them) reads or replaces something of these
versions' insides; another version may have moved it, or fixed what it works around. So the
worker refuses to start on any other version (`check`), and a unit test fails when the installed
one is not listed (tests/unit/test_faust_adapter.py). Upgrading: go through the decision records
of the workarounds (docs/decisions/index.md, "Each Faust workaround": each says what to check on
an upgrade), run the unit, integration, fault and cluster tests, then add the version here.
"""

from __future__ import annotations

from importlib import metadata

#: distribution -> the versions tested (pyproject.toml pins the first)
TESTED: dict[str, tuple[str, ...]] = {
    "faust-streaming": ("0.15.3",),
    "aiokafka": ("0.14.0",),
}


def untested(installed: dict[str, str | None] | None = None) -> list[str]:
    """`name version` of every distribution installed in a version not tested (None: missing)."""
    if installed is None:
        installed = {name: _version(name) for name in TESTED}
    return [
        f"{name} {installed.get(name) or '(not installed)'}"
        for name in TESTED
        if installed.get(name) not in TESTED[name]
    ]


def problem(installed: dict[str, str | None] | None = None) -> str | None:
    """One line saying why the worker must not start on these versions, or None."""
    wrong = untested(installed)
    if not wrong:
        return None
    tested = ", ".join(f"{name} {' or '.join(versions)}" for name, versions in TESTED.items())
    return (
        f"{', '.join(wrong)} is not a version its Faust workarounds were tested with ({tested}); "
        "install those (pip install -e .) or see services/rules/faust_adapter/versions.py to test another"
    )


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
