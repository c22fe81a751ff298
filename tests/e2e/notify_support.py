"""What the notifier's end-to-end tests share: a real HTTP receiver and a real SMTP mailbox (aiosmtpd)
in the test process, the notifier as a process on a running stack, the docs' signature check, and
the players' endpoints registered through the gateway's API."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import threading
import time
from collections.abc import Iterator
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from bench.procs import Service, free_port
from tests import support

from .gateway_stack import RunningStack

Received = list[tuple[str, dict[str, str], bytes]]  # (path, headers, body) of each POST, in arrival order


class Mailbox:
    """An aiosmtpd handler that keeps every message it is given."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def handle_DATA(self, server, session, envelope) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"


@contextlib.contextmanager
def http_receiver() -> Iterator[tuple[str, Received]]:
    """A webhook receiver: records every POST and answers 200, or 503 under /dead/."""
    received: Received = []
    lock = threading.Lock()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                received.append((self.path, dict(self.headers.items()), body))
            self.send_response(503 if self.path.startswith("/dead/") else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def smtp_mailbox() -> Iterator[tuple[int, Mailbox]]:
    box = Mailbox()
    controller = Controller(box, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield controller.port, box
    finally:
        controller.stop()


@contextlib.contextmanager
def notifier_on(stack: RunningStack, home: Path, smtp_port: int) -> Iterator[Service]:
    """The notifier as a process of `stack`, sending e-mail to `smtp_port`, with retries fast enough
    for a test; started and ready, stopped afterwards."""
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap,
        "PLYLOG_TOPIC_PREFIX": stack.topics.prefix,
        "REDIS_URL": stack.redis_url,
        "PLYLOG_REDIS_PREFIX": stack.keys.prefix,
        "PLYLOG_NOTIFY_ALLOW_PRIVATE": "1",
        "PLYLOG_SMTP_HOST": "127.0.0.1",
        "PLYLOG_SMTP_PORT": str(smtp_port),
        "PLYLOG_SMTP_FROM": "plylog <plylog@example.org>",
        "PLYLOG_NOTIFY_BACKOFF_S": "0.05",
        "PLYLOG_NOTIFY_BACKOFF_CAP_S": "0.2",
        "PLYLOG_NOTIFY_MAX_ATTEMPTS": "3",
        "PLYLOG_NOTIFY_LEASE_S": "5",
    }
    notifier = Service("notifier", "services.notifier", (), env, home)
    notifier.start().wait_ready(timeout=90)
    try:
        yield notifier
    finally:
        notifier.stop()


def register_endpoint(stack: RunningStack, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    answer = stack.http.post("/v1/notifications/endpoints", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    return answer.json()


#: services.notifier delivers within seconds; a loaded CI machine may take minutes
wait_until = functools.partial(support.wait_until, timeout=120.0, every=0.2)


def hooks(received: Received, path: str) -> list[tuple[dict[str, str], bytes]]:
    return [(headers, body) for p, headers, body in list(received) if p == path]


def mails(box: Mailbox, address: str) -> list[Any]:
    return [m for m in list(box.messages) if m["To"] == address]


def verified(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The check docs/notifications.md gives (three lines)."""
    t, v1 = (part.split("=", 1)[1] for part in headers["Plylog-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, v1) and abs(time.time() - int(t)) < 300
