"""Browser tests of the web client: the real stack (rules worker, projector, gateway processes on
the test broker and Redis, topics and Redis prefix of their own, one stack per module, stopped
after it) and Debian's Chromium driven by Playwright for Python.

Chromium: `PLYLOG_CHROMIUM` or /usr/bin/chromium (`make setup` installs Debian's `chromium` as
root). Playwright's own browser download is never used. Without Chromium or Playwright the
tests are skipped, except under CI=true, where that is a failure.

Screenshots go to tests/browser/screenshots/ (git-ignored). With PLYLOG_DOCS_SCREENSHOTS=1
(`make docs-screenshots`) the ones the docs' tour shows are also written to docs/images/tour/,
which is tracked (docs/decisions/screenshots.md).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.gateway_stack import running_stack

CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
SCREENSHOTS = Path(__file__).parent / "screenshots"
TOUR_SCREENSHOTS = Path(__file__).parents[2] / "docs" / "images" / "tour"
TOUR_PAGES = frozenset({"lobby", "strands-vs-computer", "replay"})  # what docs/getting-started.md shows
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
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
        pytest.fail(
            f"{what}; CI=true, so this is a failure (`make setup` installs Chromium and Playwright)", pytrace=False
        )
    pytest.skip(f"{what} (`make setup` installs it)")


def chromium_path() -> str:
    path = os.environ.get("PLYLOG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file():
        _missing(f"no Chromium at {path} (apt-get install -y chromium, or set PLYLOG_CHROMIUM)")
    return path


@pytest.fixture(scope="module")
def web_stack(kafka_bootstrap, redis_url, tmp_path_factory):
    with running_stack(
        kafka_bootstrap,
        redis_url,
        tmp_path_factory.mktemp("web"),
        "web",
        PARTITIONS,
        bots=True,
        PLYLOG_RATE_PER_S="200",
        PLYLOG_RATE_BURST="200",
        PLYLOG_SSE_KEEPALIVE_S="2",
    ) as running:
        yield running


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
        record_sockets(page)
        return page

    errors: list[str] = []
    yield make
    for context in contexts:
        for page in context.pages:
            validate_what_the_page_received(page)
        context.close()
    assert not errors, f"JavaScript errors in the pages: {errors}"


#: page -> every WebSocket frame it sent and received: [(url, "sent" | "received", payload)]
SOCKET_FRAMES: dict = {}


def record_sockets(page) -> list:
    """Keep every frame of the page's WebSockets (the seat sockets) in SOCKET_FRAMES[page]."""
    frames = SOCKET_FRAMES.setdefault(page, [])

    def opened(socket) -> None:
        socket.on("framesent", lambda payload: frames.append((socket.url, "sent", payload)))
        socket.on("framereceived", lambda payload: frames.append((socket.url, "received", payload)))

    page.on("websocket", opened)
    return frames


def validate_what_the_page_received(page) -> None:
    """Every result (action answers, stream events, seat-socket messages) and view the page
    received, against the committed JSON Schemas (tests/schema_check.py counts them for the run's
    summary)."""
    import orjson

    from tests.schema_check import check, check_result

    for _, direction, payload in SOCKET_FRAMES.pop(page, []):
        message = orjson.loads(payload) if direction == "received" else {}
        kind = message.pop("type", None)
        if kind in ("result", "update") and message.get("status") in ("accepted", "rejected"):
            check_result(message)
        elif kind == "hello" and message.get("view") is not None:
            check("view", message["view"], game=message["view"]["game"])

    for entry in page.evaluate("window.__plylogNetwork || []"):
        path, text = entry["url"].split("?")[0], entry["text"]
        if not text:
            continue
        if path.endswith("/actions"):
            body = orjson.loads(text)
            if body.get("status") in ("accepted", "rejected"):
                check_result(body)
        elif path.endswith("/stream"):
            for line in text.splitlines():
                if line.startswith("data: "):
                    check_result(line[len("data: ") :], kind="sse")
        elif "/v1/matches/" in path and path.count("/") == 5 and not path.endswith("/tokens"):
            view = orjson.loads(text)
            if "error" not in view:
                check("view", view, game=view["game"])


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if name in TOUR_PAGES and os.environ.get("PLYLOG_DOCS_SCREENSHOTS") == "1":
        TOUR_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(TOUR_SCREENSHOTS / f"{name}.png"))
    return path
