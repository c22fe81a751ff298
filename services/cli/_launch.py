"""What one `plylog up` run started: the records it keeps (and saves as it goes), the lines it
reports, the ports it needs free, and the rollback that stops what it started when a step fails.
The single-node steps (_up.py) and the cluster's (_cluster_up.py) both work through it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from services.common.settings import Settings

from . import _cluster_layout
from ._console import say
from ._down import KAFKA_STOP_TIMEOUT
from ._errors import CliError
from ._proc import ProcRecord, describe_port_user, port_free, stop
from ._state import atomic_write, drop_record, save_record


class Launch:
    def __init__(
        self,
        s: Settings,
        *,
        infra_only: bool,
        rules_workers: int,
        timeout: float,
        write_started: Path | None,
        cluster: bool = False,
    ) -> None:
        self.s = s
        self.infra_only = infra_only
        self.cluster = cluster
        instances = _cluster_layout.SERVICE_INSTANCES if cluster else 1
        self.opts = {"rules_workers": rules_workers, "projectors": instances, "gateways": instances}
        self.timeout = timeout
        self.write_started = write_started
        self.records: dict[str, ProcRecord] = {}
        self.started: list[ProcRecord] = []
        self.children: dict[str, subprocess.Popen] = {}

    def line(self, name: str, what: str) -> None:
        say(f"[bold]{name:<12}[/bold] {what}")

    def note_started(self) -> None:
        if self.write_started is not None:
            names = [r.name for r in self.started if r.alive()]
            atomic_write(self.write_started, "".join(n + "\n" for n in names))

    def rollback(self) -> None:
        if not self.started:
            return
        say("[yellow]up failed: stopping what this run started[/yellow]")
        for rec in reversed(self.started):
            result = stop(rec, KAFKA_STOP_TIMEOUT if rec.name == "kafka" else 10)
            self.line(rec.name, result)
            drop_record(self.s, rec.name)
            self.records.pop(rec.name, None)
        self.started.clear()

    def existing(self, name: str) -> ProcRecord | None:
        rec = self.records.get(name)
        if rec is None:
            return None
        if rec.alive():
            return rec
        self.line(name, f"[dim]stale pid file (pid {rec.pid} is gone); starting anew[/dim]")
        drop_record(self.s, name)
        del self.records[name]
        return None

    def save(self, rec: ProcRecord) -> None:
        save_record(self.s, rec)

    def keep(self, rec: ProcRecord, child: subprocess.Popen | None = None) -> None:
        self.records[rec.name] = rec
        self.started.append(rec)
        if child is not None:
            self.children[rec.name] = child
        save_record(self.s, rec)

    def need_port(self, port: int, what: str, env: str) -> None:
        if not port_free(port):
            raise CliError(
                f"{describe_port_user(port)}; {what} cannot start there (not a process plylog started)",
                f"stop that process, or choose another port: {env}=<port> (or the matching --option)",
            )
