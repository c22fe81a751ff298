"""Sending one delivery: a webhook (HTTP POST of the JSON payload, signed) or an e-mail (SMTP).
Each answers a `Sent`: delivered, or why not and whether trying again could help."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import smtplib
import socket
import time
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

import httpx
import orjson

from services.common.notify_store import EndpointProblem, Guard, webhook_url

SIGNATURE_HEADER = "Plylog-Signature"
USER_AGENT = "plylog-notifier/1"


@dataclass(frozen=True)
class Sent:
    ok: bool
    reason: str = ""
    permanent: bool = False  # no retry can help (e.g. 410 Gone, the URL now refused)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body, keyed by the endpoint's secret>`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    sender: str
    starttls: bool = False
    username: str = ""
    password: str = ""
    timeout_s: float = 10.0


SUBJECTS = {
    "your_move": "Your move in {game} match {match_id}",
    "invited": "You are invited to a {game} match ({match_id})",
    "match_over": "Match over: {game} match {match_id} ({result})",
    "clock_low": "Your clock in {game} match {match_id} runs out soon",
}


class Channels:
    def __init__(self, guard: Guard, smtp: SmtpSettings | None, *, timeout_s: float = 5.0):
        self.guard, self.smtp = guard, smtp
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
            trust_env=False,
        )

    async def close(self) -> None:
        await self._http.aclose()

    async def send(self, endpoint: dict[str, Any], delivery: dict[str, str]) -> Sent:
        if endpoint["channel"] == "webhook":
            return await self.webhook(endpoint, delivery)
        return await self.email(endpoint, delivery)

    async def webhook(self, endpoint: dict[str, Any], delivery: dict[str, str]) -> Sent:
        try:
            host, port = webhook_url(endpoint["url"], self.guard)
            await self._check_resolved(host, port)
        except EndpointProblem as problem:
            return Sent(False, f"refused: {problem}", permanent=True)
        except OSError as error:
            return Sent(False, f"dns: {error}")
        body = delivery["payload"].encode()
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature(endpoint["secret"], int(time.time()), body),
            "Plylog-Notification": delivery["notification"],
            "Plylog-Delivery": delivery["id"],
            "Plylog-Attempt": delivery.get("attempts", "1"),
        }
        try:
            request = self._http.build_request("POST", endpoint["url"], content=body, headers=headers)
            response = await self._http.send(request, stream=True)  # its body is never read
            await response.aclose()
        except httpx.TimeoutException as error:
            return Sent(False, f"timeout: {type(error).__name__}")
        except httpx.HTTPError as error:
            return Sent(False, f"http: {type(error).__name__}: {error}"[:300])
        if 200 <= response.status_code < 300:
            return Sent(True)
        return Sent(False, f"HTTP {response.status_code}", permanent=response.status_code == 410)

    async def _check_resolved(self, host: str, port: int) -> None:
        """Every address the host name resolves to must be allowed (a name may point anywhere)."""
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        for *_, address in found:
            problem = self.guard.address_problem(str(address[0]), port)
            if problem:
                raise EndpointProblem(f"{host} resolves to {address[0]}: {problem}")

    async def email(self, endpoint: dict[str, Any], delivery: dict[str, str]) -> Sent:
        if self.smtp is None:
            return Sent(False, "no SMTP server configured (PLYLOG_SMTP_HOST)", permanent=True)
        message = email_message(self.smtp.sender, endpoint["address"], delivery)
        try:
            await asyncio.to_thread(_send_mail, self.smtp, message)
        except smtplib.SMTPRecipientsRefused as error:
            return Sent(False, f"smtp: recipient refused: {error.recipients}"[:300], permanent=True)
        except (smtplib.SMTPException, OSError) as error:
            return Sent(False, f"smtp: {type(error).__name__}: {error}"[:300])
        return Sent(True)


def email_message(sender: str, to: str, delivery: dict[str, str]) -> EmailMessage:
    payload = orjson.loads(delivery["payload"])
    details = payload.get("details") or {}
    fields = {"game": payload.get("game") or "", "match_id": payload["match_id"], "result": details.get("result", "")}
    message = EmailMessage()
    message["From"], message["To"] = sender, to
    message["Subject"] = SUBJECTS[payload["kind"]].format(**fields)
    message["Date"] = formatdate(usegmt=True)
    message["Message-ID"] = f"<{delivery['id']}@plylog>"  # the same on a retry: mail clients merge repeats
    message["Plylog-Notification"] = payload["id"]
    text = f"{message['Subject']}.\n\nplylog notification {payload['id']}:\n"
    message.set_content(text + orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")
    return message


def _send_mail(smtp: SmtpSettings, message: EmailMessage) -> None:
    with smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout_s) as server:
        if smtp.starttls:
            server.starttls()
        if smtp.username:
            server.login(smtp.username, smtp.password)
        server.send_message(message)
