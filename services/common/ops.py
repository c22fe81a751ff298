"""The small HTTP server of a worker process (rules worker, projector) for its operators and
orchestrators, on PLYLOG_OPS_PORT (bound to PLYLOG_OPS_HOST):

  GET /livez    200 while the process's loop runs (it beat within LIVE_WITHIN_S), else 503
  GET /readyz   200 when its partitions are assigned, recovered and caught up within
                PLYLOG_READY_LAG records, else 503; the JSON body says which check failed
  GET /metrics  Prometheus text format (the names are in docs/operations.md)

It runs in a thread of its own, so a busy or blocked loop cannot stop it from answering (which
is the point of /livez). The loop hands over what the server shows: `beat()` and `publish()`
with plain values (snapshots), so the thread never reads the loop's own objects.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

log = logging.getLogger("plylog.ops")
LIVE_WITHIN_S = 30.0


@dataclass
class Readiness:
    """What /readyz decides on, as the loop last saw it."""

    assigned: bool = False  # the group gave this process its partitions (possibly none)
    recovered: bool = False  # it resumed from its stored positions (table recovery, offsets in Redis)
    lag: int | None = None  # records behind the end of its partitions (None: not known yet)
    detail: dict[str, Any] = field(default_factory=dict)


class OpsState:
    """Shared between the process's loop (writes) and the ops server (reads)."""

    def __init__(self, service: str, instance: str, ready_lag: int):
        self.service, self.instance, self.ready_lag = service, instance, ready_lag
        self.registry = CollectorRegistry()
        self.started = time.monotonic()
        self._beat = time.monotonic()
        self._readiness = Readiness()
        self._lock = threading.Lock()

    def beat(self) -> None:
        """The loop is running (call it from the loop, at least every few seconds)."""
        self._beat = time.monotonic()

    def publish(self, readiness: Readiness) -> None:
        with self._lock:
            self._readiness = readiness

    def live(self) -> tuple[bool, dict[str, Any]]:
        age = time.monotonic() - self._beat
        return age < LIVE_WITHIN_S, {"loop_last_beat_s": round(age, 3), "live_within_s": LIVE_WITHIN_S}

    def ready(self) -> tuple[bool, dict[str, Any]]:
        with self._lock:
            r = self._readiness
        checks = {
            "assigned": r.assigned,
            "recovered": r.recovered,
            "caught_up": r.lag is not None and r.lag <= self.ready_lag,
        }
        body = {**checks, "lag": r.lag, "ready_lag": self.ready_lag, **r.detail}
        live, why = self.live()
        return live and all(checks.values()), {**body, **why}


def serve(state: OpsState, host: str, port: int) -> ThreadingHTTPServer | None:
    """Start the ops server in a daemon thread (None when port is 0: no server)."""
    if not port:
        return None

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._answer(200, generate_latest(state.registry), CONTENT_TYPE_LATEST)
            elif path in ("/livez", "/readyz"):
                ok, body = (state.live if path == "/livez" else state.ready)()
                body = {
                    "status": "ok" if ok else "unavailable",
                    "service": state.service,
                    "instance": state.instance,
                    **body,
                }
                self._answer(200 if ok else 503, orjson.dumps(body), "application/json")
            else:
                self._answer(
                    404,
                    orjson.dumps({"error": {"code": "not_found", "message": "try /livez, /readyz or /metrics"}}),
                    "application/json",
                )

        def _answer(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # probes every few seconds: not news
            pass

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as error:
        raise OSError(
            f"the ops server cannot listen on {host}:{port} ({error.strerror}); "
            "set PLYLOG_OPS_PORT to a free port (0: no ops server)"
        ) from error
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="ops-http", daemon=True).start()
    log.info("ops server on http://%s:%d (/livez, /readyz, /metrics)", host, port)
    return server


def every(seconds: float) -> Callable[[], bool]:
    """A rate limiter for the loop: the returned function is True at most once per `seconds`."""
    last = [0.0]

    def due() -> bool:
        now = time.monotonic()
        if now - last[0] >= seconds:
            last[0] = now
            return True
        return False

    return due
