"""Errors every `plylog` command may raise to fail cleanly (see main.main).

Raise ``CliError(cause, hint, log=path)``: the CLI prints the one-line cause, what to do,
and the last lines of the log, then exits non-zero; never a bare traceback.
"""

from __future__ import annotations

from pathlib import Path

from ._logs import tail


class CliError(Exception):
    def __init__(
        self,
        cause: str,
        hint: str = "",
        log: Path | None = None,
        extra_logs: tuple[Path, ...] = (),
        exit_code: int = 1,
        since: dict[Path, int] | None = None,
    ) -> None:
        super().__init__(cause)
        self.cause = cause
        self.hint = hint
        self.log = log
        self.extra_logs = tuple(extra_logs)
        self.exit_code = exit_code
        self.since = since or {}  # log -> byte offset: show only what came after
        self.tails: dict[Path, list[str]] | None = None

    def freeze_logs(self, lines: int = 20) -> None:
        """Capture the logs' tails now (before a rollback adds shutdown noise to them)."""
        if self.tails is None:
            self.tails = {p: tail(p, lines, self.since.get(p, 0)) for p in (self.log, *self.extra_logs) if p}

    def log_tails(self, lines: int = 20) -> dict[Path, list[str]]:
        self.freeze_logs(lines)
        return self.tails or {}
