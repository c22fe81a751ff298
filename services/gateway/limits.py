"""The request body limit, applied before a body is read or parsed: a declared length over the
limit is refused at once, and a body sent without one (chunked) is cut off as soon as it passes it."""

from __future__ import annotations

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import error_body


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send, f"declared {declared.decode(errors='replace')}")
            return
        received, over = 0, False

        async def counted() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request" and not over:
                received += len(message.get("body", b""))
                if received > self.max_bytes:  # end the body here; the answer is replaced below
                    over = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def answering(message: Message) -> None:
            if not over:
                await send(message)
            elif message["type"] == "http.response.start":
                await self._refuse(send, f"more than {self.max_bytes}")

        await self.app(scope, counted, answering)

    async def _refuse(self, send: Send, size: str) -> None:
        body = orjson.dumps(
            error_body(
                "too_large", f"the request body is {size} bytes; the limit is {self.max_bytes} (PLYLOG_MAX_BODY_BYTES)"
            )
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
