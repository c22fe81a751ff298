"""Browser tests of the web client: the real stack (rules worker, projector, gateway processes on
the test broker and Redis, topics and Redis prefix of their own, one stack per module, stopped
after it) and Debian's Chromium driven by Playwright for Python.

Chromium: `PLYLOG_CHROMIUM` or /usr/bin/chromium (`make setup` installs Debian's `chromium` as
root). Playwright's own browser download is never used. Without Chromium or Playwright the
tests are skipped, except under CI=true, where that is a failure.

Screenshots go to tests/browser/screenshots/ (git-ignored).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from services.common import kafka_admin
from services.common.redis_keys import Keys
from services.common.settings import Topics
from tests.e2e.gateway_stack import gateway_process, unique_redis_prefix, wait_healthy
from tests.integration.harness import ServiceProcess, rules_worker

CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
SCREENSHOTS = Path(__file__).parent / "screenshots"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PARTITIONS = 2

# Tees every fetch response body the page receives (streams too, chunk by chunk) into
# window.__plylogNetwork, so a test can check what reached the browser, SSE included.
RECORD_FETCH = """
(() => {
  const seen = window.__plylogNetwork = [];
  const original = window.fetch;
  window.fetch = async (...args) => {
    const response = await original(...args);
    const entry = {url: response.url, text: ""};
    seen.push(entry);
    if (response.body) {
      const reader = response.clone().body.getReader();
      const decoder = new TextDecoder();
      (async () => {
        try {
          for (;;) {
            const {value, done} = await reader.read();
            if (done) break;
            entry.text += decoder.decode(value, {stream: true});
          }
        } catch (e) { entry.error = String(e); }
      })();
    }
    return response;
  };
})();
"""


def _missing(what: str) -> None:
    if CI:
        pytest.fail(f"{what}; CI=true, so this is a failure (`make setup` installs Chromium and Playwright)",
                    pytrace=False)
    pytest.skip(f"{what} (`make setup` installs it)")


def chromium_path() -> str:
    path = os.environ.get("PLYLOG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        _missing(f"no Chromium at {path} (apt-get install -y chromium, or set PLYLOG_CHROMIUM)")
    return path


@dataclass
class WebStack:
    url: str
    topics: Topics
    bootstrap: str
    redis_url: str
    keys: Keys
    gateway: ServiceProcess
    processes: list[ServiceProcess]
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def logs(self) -> str:
        return "\n\n".join(f"--- {p.name}:\n{p.tail(30)}" for p in self.processes)

    def restart_gateway(self) -> None:
        self.gateway.kill()
        self.gateway.start()
        wait_healthy(self.gateway, self.url)

    def view(self, match_id: str) -> dict[str, Any]:
        response = self.http.get(f"/v1/matches/{match_id}")
        response.raise_for_status()
        return response.json()


@pytest.fixture(scope="module")
def web_stack(kafka_bootstrap, redis_url, tmp_path_factory):
    home: Path = tmp_path_factory.mktemp("web")
    topics = Topics(f"w{uuid.uuid4().hex[:8]}.")
    kafka_admin.ensure_contract_topics(kafka_bootstrap, topics.prefix, PARTITIONS)
    prefix = unique_redis_prefix()
    env = {"KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "PLYLOG_TOPIC_PREFIX": topics.prefix,
           "REDIS_URL": redis_url, "PLYLOG_REDIS_PREFIX": prefix}
    worker = rules_worker(kafka_bootstrap, topics, home)
    projector = ServiceProcess("services.projector", "projector", env, home, args=("--name", "projector-web"))
    gateway, url = gateway_process(kafka_bootstrap, topics, redis_url, prefix, home,
                                   PLYLOG_RATE_PER_S="200", PLYLOG_RATE_BURST="200", PLYLOG_SSE_KEEPALIVE_S="2")
    processes = [worker, projector, gateway]
    try:
        for process in processes:
            process.start()
        worker.wait_for_log("assigned partitions of", timeout=90)
        projector.wait_for_log(f"assigned partitions: {topics.prefix}", timeout=90)  # not the first, empty one
        wait_healthy(gateway, url)
        yield WebStack(url, topics, kafka_bootstrap, redis_url, Keys(prefix), gateway, processes)
    finally:
        for process in reversed(processes):
            process.stop()
        with contextlib.suppress(Exception):
            kafka_admin.delete_topics(kafka_bootstrap, topics.all())
        with contextlib.suppress(Exception):
            client = redis.Redis.from_url(redis_url)
            for key in client.scan_iter(match=f"{prefix}*", count=1000):
                client.delete(key)
            client.close()


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright for Python is not installed (pip install playwright)")
    executable = chromium_path()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def new_page(browser, web_stack, request):
    """Factory: new_page(player) opens a page in a fresh browser context (its own localStorage)
    whose player name is `player`; fetch responses are recorded (see RECORD_FETCH)."""
    contexts = []
    SCREENSHOTS.mkdir(exist_ok=True)

    def make(player: str):
        context = browser.new_context(base_url=web_stack.url, viewport={"width": 1280, "height": 900})
        context.add_init_script(f"localStorage.setItem('plylog.player', {player!r});")
        context.add_init_script(RECORD_FETCH)
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(f"{player}: {error}"))
        return page

    errors: list[str] = []
    yield make
    for context in contexts:
        context.close()
    assert not errors, f"JavaScript errors in the pages: {errors}"


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
