"""The event loop the gateway and the rules worker choose (services/common/event_loop.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from services.common.event_loop import chosen_loop
from services.common.settings import SettingsError


def test_uvloop_by_default_and_asyncio_when_asked():
    assert chosen_loop({}) == "uvloop"
    assert chosen_loop({"PLYLOG_EVENT_LOOP": " AsyncIO "}) == "asyncio"


def test_an_unknown_loop_is_refused_with_the_choices():
    with pytest.raises(SettingsError, match="uvloop, asyncio"):
        chosen_loop({"PLYLOG_EVENT_LOOP": "trio"})


def test_faust_workers_run_on_uvloop_after_modes_switch():
    """The rules worker relies on mode's documented switch (mode.loop.use) taking effect for the
    loop Faust's Worker makes; this fails if a Faust or mode release stops honouring it."""
    script = (
        "import mode.loop; mode.loop.use('uvloop')\n"
        "import faust; from faust.worker import Worker\n"
        "app = faust.App('loop-check', broker='kafka://127.0.0.1:1')\n"
        "print(type(Worker(app, quiet=True).loop).__module__)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("uvloop"), out.stdout
