"""A small client of the gateway's HTTP API (httpx) for the CLI: JSON calls and SSE reading."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson

from services.common.settings import load

from ._errors import CliError

READ_RETRIES = 30


def gateway_url() -> str:
    """PLYLOG_GATEWAY_URL, else the local gateway on PLYLOG_GATEWAY_PORT."""
    url = os.environ.get("PLYLOG_GATEWAY_URL", "").strip()
    return url.rstrip("/") if url else f"http://127.0.0.1:{load().gateway_port}"


class Api:
    def __init__(self, base_url: str | None = None, timeout: float = 30.0):
        self.base_url = base_url or gateway_url()
        self._client = httpx.Client(base_url=self.base_url, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def call(self, method: str, path: str, token: str | None = None, **kwargs: Any) -> Any:
        """The answer's JSON; a read answered 503 with Retry-After (a long match's log being
        refolded over several requests) is asked again, a few times."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        for attempt in range(READ_RETRIES + 1):
            try:
                response = self._client.request(method, path, headers=headers, **kwargs)
            except httpx.TransportError as error:
                raise self._unreachable(error) from None
            wait = response.headers.get("Retry-After", "")
            if method != "GET" or response.status_code != 503 or not wait.isdigit() or attempt == READ_RETRIES:
                break
            time.sleep(min(int(wait), 5))
        return self._decode(response)

    def stream(self, match_id: str, since: int = 0) -> Iterator[tuple[str, dict[str, Any]]]:
        """(event, data) of the match's SSE stream from seq `since`, forever (reconnects, resuming
        from the last seq seen)."""
        last = since
        while True:
            try:
                with self._client.stream(
                    "GET",
                    f"/v1/matches/{match_id}/stream",
                    headers={"Last-Event-ID": str(last)},
                    timeout=httpx.Timeout(10.0, read=None),
                ) as response:
                    if response.status_code != 200:
                        response.read()
                        self._decode(response)
                    for event, data, event_id in parse_sse(response.iter_lines()):
                        if event_id is not None:
                            last = int(event_id)
                        yield event, data
            except (httpx.TransportError, httpx.StreamError):
                continue  # the connection broke: resume from `last`

    def _decode(self, response: httpx.Response) -> Any:
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400:
            error = (body or {}).get("error", {}) if isinstance(body, dict) else {}
            code, message = error.get("code", str(response.status_code)), error.get("message", response.text[:200])
            hint = {
                "unauthorized": "pass the seat token you got from `plylog new` or `plylog join` with --token",
                "forbidden": "use the token of your own seat of this match",
                "unknown_match": "check the match id (open and running matches: GET /v1/matches?status=open|active)",
                "rate_limited": f"slow down; retry after {response.headers.get('Retry-After', '1')} s",
            }.get(code, "")
            raise CliError(f"{code}: {message}", hint)
        return body

    def _unreachable(self, error: Exception) -> CliError:
        return CliError(
            f"cannot reach the plylog gateway at {self.base_url} ({type(error).__name__}: {error})",
            "start it with `plylog up` (or set PLYLOG_GATEWAY_URL to where it runs)",
        )


def parse_sse(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    """(event, JSON data, id or None) of each Server-Sent Event; comments are skipped."""
    event, event_id = "message", None
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event, orjson.loads("\n".join(data)), event_id
            event, data, event_id = "message", [], None
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
