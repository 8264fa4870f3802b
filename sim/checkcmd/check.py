"""``CommandCheck``: a ``Check`` whose answers come from a child process over JSON Lines."""

from __future__ import annotations

import json
import shlex
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from platform_testbed.checks.model import Look
from platform_testbed.checks.protocol import Step
from platform_testbed.sim.checkcmd.child import Child, ExternalCheckError, end_all
from platform_testbed.sim.checkcmd.wire import (
    AnswerError,
    look_to_api,
    read_answer,
    request_line,
    shorten,
)
from platform_testbed.sim.config.options import option

#: Per-call limit on one answer, and the longest one may take: the registry's
#: ``check_cmd_timeout_s`` (sim.config.options, with why).
DEFAULT_TIMEOUT_S = float(option("check_cmd_timeout_s").default or 0)
MAX_TIMEOUT_S = float(option("check_cmd_timeout_s").most or 0)
#: After stdin closes, how long a polite child gets to exit before it is killed.
CLOSE_GRACE_S = 1.0
#: The work one run may cost, whatever the count of its looks: the bytes of its requests
#: together (a process that never takes the incremental mode is sent every look again in
#: each request, so a run of n looks costs n^2 / 2 looks' bytes: an endless ``{"wait": 0}``
#: ran past 45 s on the way to the 10,000-look limit) ...
MAX_RUN_REQUEST_BYTES = 256 << 20
#: ... and the wall-clock time of its answers together, in per-answer timeouts (30 s at the
#: default 5 s; --check-cmd-timeout raises both). Assumed: a check that does arithmetic answers
#: in milliseconds, so a run of hundreds of looks costs well under one timeout.
RUN_TIMEOUTS = 6
#: Interpreters whose first script argument names the check better than they do.
_INTERPRETERS = frozenset(
    {"node", "nodejs", "deno", "bun", "python", "python3", "sh", "bash", "ruby", "perl", "php"}
)


def split_command(command: str | Sequence[str]) -> list[str]:
    """The argv of a command line split as a POSIX shell would; ``ValueError`` if it cannot."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("the command is empty")
    return argv


def derive_name(argv: Sequence[str]) -> str:
    """A check name from a command: its program, or the script an interpreter runs."""
    program = Path(argv[0]).name
    options = [w for w in argv[1:] if w.startswith("-")]
    # With -c/-e the next word is code, not a script: the interpreter is the best name.
    if program in _INTERPRETERS and not {"-c", "-e", "--eval"} & set(options):
        scripts = [w for w in argv[1:] if not w.startswith("-")]
        if scripts:
            return Path(scripts[0]).name
    return program


#: Every CommandCheck not yet closed, so a command-line run can close them all at its end.
_LIVE: weakref.WeakSet[CommandCheck] = weakref.WeakSet()


class CommandCheck:
    """A check run as a subprocess speaking the JSON Lines protocol (``docs/check-protocol.md``).

    ``command`` is split like a POSIX shell would (no shell runs it); ``options`` go to
    the child in every request (the scenario's ``[check]`` timing and ``--check-opt``).
    Use it as a context manager, or call ``close``.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        name: str | None = None,
        options: Mapping[str, Any] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.argv = split_command(command)
        self.name = name or derive_name(self.argv)
        self.options = dict(options or {})
        try:
            self._options_json = json.dumps(self.options, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ValueError(f"options must be JSON values ({error})") from None
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0 (got {timeout_s})")
        self.timeout_s = timeout_s
        self._child: Child | None = None
        self._runs = 0
        self._run = ""
        self._run_publish_ms: int | None = None
        self._looks: list[Look] = []
        self._looks_json: list[str] = []
        # The work this run has cost so far: bytes sent, seconds waited for answers.
        self._run_bytes, self._run_s = 0, 0.0
        # What the running child was told: offered the incremental mode, took it, and the
        # run and number of its looks its last request brought it up to.
        self._offered = self._incremental = False
        self._child_run, self._child_sent = "", 0
        _LIVE.add(self)

    @property
    def pid(self) -> int | None:
        """The running child's process id, if one runs."""
        return self._child.proc.pid if self._child is not None else None

    def _start_run_if_new(self, publish_started_ms: int, looks: Sequence[Look]) -> None:
        fed = self._looks
        new = (
            not looks
            or len(looks) < len(fed)
            or publish_started_ms != self._run_publish_ms
            # A driver may rebuild equal looks each call (parsed JSON): still the same run.
            # The first and the newest fed look are compared, not every one: comparing all
            # made a run of n looks cost n^2 / 2 comparisons (the drivers only ever append).
            or (bool(fed) and (_differ(fed[0], looks[0]) or _differ(fed[-1], looks[len(fed) - 1])))
        )
        if new:
            self._runs += 1
            self._run = f"run-{self._runs}"
            self._run_publish_ms = publish_started_ms
            self._looks, self._looks_json = [], []
            self._run_bytes, self._run_s = 0, 0.0
        for look in looks[len(self._looks) :]:
            self._looks.append(look)
            self._looks_json.append(json.dumps(look_to_api(look), separators=(",", ":")))

    def _request(self, publish_started_ms: int) -> tuple[str, bool]:
        """The request for the running child, and whether it offers the incremental mode.

        A new process is offered the mode in its first request, which carries every look
        of the run; once it opted in, a request carries only the looks it was not sent.
        """
        offer = not self._offered
        if self._incremental and self._child_run == self._run:
            start = self._child_sent
            line = request_line(self._run, publish_started_ms, self._looks_json[start:],
                                self._options_json, looks_from=start)
        else:
            line = request_line(self._run, publish_started_ms, self._looks_json,
                                self._options_json, looks_from=0 if self._incremental else None,
                                offer=offer)
        return line, offer

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Ask the child for the next step; ``ExternalCheckError`` if it cannot give one."""
        self._start_run_if_new(publish_started_ms, looks)
        try:
            if self._child is None:
                try:
                    self._child = Child(self.argv)
                except OSError as error:
                    raise ExternalCheckError(f"cannot start ({error.strerror or error})") from None
                self._offered = self._incremental = False
            line, offer = self._request(publish_started_ms)
            answer = self._exchange(self._child, line)
            try:
                step, opted = read_answer(answer, offered=offer)
            except AnswerError as error:
                raise ExternalCheckError(f"answered {shorten(answer)}: {error}") from None
            if offer:
                self._offered, self._incremental = True, opted
            self._child_run, self._child_sent = self._run, len(self._looks)
            return step
        except ExternalCheckError as error:
            where = f"{self.name} ({shlex.join(self.argv)}), {self._run} after {len(looks)} look(s)"
            tail = self._child.stderr_tail() if self._child is not None else ""
            self._stop(grace_s=0)
            message = f"{where}: {error}" + (f"; stderr: {tail}" if tail else "")
            raise ExternalCheckError(message) from None
        except BaseException:
            # Cut short mid-exchange (the driver's --check-timeout, Ctrl-C): the child may
            # still answer this request, so it must not serve the next one.
            self._stop(grace_s=0)
            raise

    def _exchange(self, child: Child, line: str) -> str:
        """``child.exchange``, within what is left of this run's budget (bytes and seconds)."""
        self._run_bytes += len(line)
        if self._run_bytes > MAX_RUN_REQUEST_BYTES:
            raise ExternalCheckError(
                f"this run's requests passed {MAX_RUN_REQUEST_BYTES >> 20} MiB, each carrying every "
                "look so far (answer the first request with \"incremental\": true to be sent "
                "only the new ones: docs/check-protocol.md)")
        budget_s = RUN_TIMEOUTS * self.timeout_s
        limit = min(self.timeout_s, budget_s - self._run_s)
        started = time.monotonic()
        try:
            return child.exchange(line, limit)
        except ExternalCheckError:
            if limit < self.timeout_s and time.monotonic() - started >= limit:
                raise ExternalCheckError(
                    f"this run's answers took over {budget_s:g} s together ({RUN_TIMEOUTS} "
                    f"times the {self.timeout_s:g} s one answer may take; --check-cmd-timeout "
                    "raises both)") from None
            raise
        finally:
            self._run_s += time.monotonic() - started

    @property
    def incremental(self) -> bool:
        """Whether the running child took the incremental mode (docs/check-protocol.md)."""
        return self._incremental

    def _release(self) -> Child | None:
        """Let go of the running child, if any, and return it (to be closed by the caller)."""
        child, self._child = self._child, None
        return child

    def _stop(self, grace_s: float) -> None:
        # Let go of the child first: the driver's limit raises again every 50 ms until the
        # cut call returns, and a second raise inside close() once left this check holding
        # a half-closed child, whose closed pipes the next run read (EBADF).
        child = self._release()
        if child is not None:
            child.close(grace_s)

    def close(self) -> None:
        """Stop the child (EOF on stdin, then kill its whole session) and reap it."""
        self._stop(CLOSE_GRACE_S)
        _LIVE.discard(self)

    def __enter__(self) -> CommandCheck:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CommandCheck({shlex.join(self.argv)!r}, name={self.name!r})"


def _differ(a: Look, b: Look) -> bool:
    return a is not b and a != b


def close_all() -> None:
    """Close every command check still open (the command line calls this when it ends):
    their children end together, in one grace (``sim.checkcmd.child.end_all``)."""
    checks = list(_LIVE)
    children = [child for check in checks if (child := check._release()) is not None]
    for check in checks:
        _LIVE.discard(check)
    end_all(children, CLOSE_GRACE_S)
