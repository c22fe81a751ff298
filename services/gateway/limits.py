"""The request body limits, applied before a body is read or parsed: a declared length over the
limit is refused at once (413), a body sent without one (chunked) is cut off as soon as it passes
it, and a body still incomplete PLYLOG_BODY_TIMEOUT_S after the app began reading it is cut off
with 408 (a client trickling its body would hold a connection and a request for ever)."""

from __future__ import annotations

import asyncio

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import error_body


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float = 10.0):
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send, f"declared {declared.decode(errors='replace')}")
            return
        received, over, late, whole = 0, False, False, False
        deadline: float | None = None

        async def counted() -> Message:
            nonlocal received, over, late, whole, deadline
            if whole or over or late:  # the body is read: what comes now is the disconnect, whenever
                return await receive()
            if deadline is None:
                deadline = asyncio.get_running_loop().time() + self.timeout_s
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:  # end the body here; the answer is replaced below
                late = True
                return {"type": "http.request", "body": b"", "more_body": False}
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                whole = not message.get("more_body", False)
                if received > self.max_bytes:  # as above
                    over = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def answering(message: Message) -> None:
            if not (over or late):
                await send(message)
            elif message["type"] == "http.response.start":
                if over:
                    await self._refuse(send, f"more than {self.max_bytes}")
                else:
                    await self._too_slow(send, received)

        await self.app(scope, counted, answering)

    async def _refuse(self, send: Send, size: str) -> None:
        message = f"the request body is {size} bytes; the limit is {self.max_bytes} (PLYLOG_MAX_BODY_BYTES)"
        await _answer(send, 413, error_body("too_large", message))

    async def _too_slow(self, send: Send, received: int) -> None:
        message = (
            f"the request body was not complete within {self.timeout_s:g} s ({received} bytes came; "
            "PLYLOG_BODY_TIMEOUT_S); send it at once"
        )
        await _answer(send, 408, error_body("body_timeout", message))


async def _answer(send: Send, status: int, error: object) -> None:
    """An error answer that closes the connection (what is left of the body is not read)."""
    body = orjson.dumps(error)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
