"""A check in any language: a subprocess that answers looks with waits and verdicts, as JSON Lines.

``CommandCheck`` is a ``Check`` (``name`` and ``next``), so every driver (the simulator,
replay, sweeps) runs it unchanged. Each call to ``next`` writes one request line on the
child's stdin and reads one answer line from its stdout; the protocol, with its JSON
Schemas and an example exchange, is in ``docs/check-protocol.md``.

One child process serves every run the object is driven for: a run starts when ``next``
is called with no looks (or fewer than last time, or for another publish) and gets a
fresh run id, so a child that keeps state can tell runs apart. Anything the child does
wrong (no answer within the per-call timeout, exit, bytes that are not one JSON answer,
an answer the schema rejects) raises ``ExternalCheckError`` with a one-line message and
the tail of its stderr; the simulator turns that into the run outcome ``error``, and the
child is killed so the next run starts a fresh one. The wall clock only ever bounds a
call: it never reaches a verdict.

POSIX only: the child runs in its own session so that ``close`` can kill it together
with anything it started (no orphans), and pipes are polled with ``selectors``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any

from checks import Look, Verdict, Wait
from checks.flyjson import machine_to_api
from checks.protocol import Step
from sim.settings import BadInput

#: The protocol version every request carries; a child should refuse one it does not know.
PROTOCOL = 1
#: Per-call limit on one answer (assumed: generous for a check that only does arithmetic,
#: yet short enough that a hung child costs one run seconds, not minutes).
DEFAULT_TIMEOUT_S = 5.0
#: How check lists spell a command check, e.g. ``cmd:node examples/checks/timestamp.js``.
SPEC_PREFIX = "cmd:"
#: An answer is a few hundred bytes; a child streaming more without a newline is broken.
MAX_ANSWER_BYTES = 1 << 20
#: Stderr kept per child (the newest bytes) and lines of it quoted in an error.
STDERR_KEEP_BYTES = 64 * 1024
STDERR_TAIL_LINES = 3
#: After stdin closes, how long a polite child gets to exit before it is killed.
CLOSE_GRACE_S = 1.0
#: Interpreters whose first script argument names the check better than they do.
_INTERPRETERS = frozenset(
    {"node", "nodejs", "deno", "bun", "python", "python3", "sh", "bash", "ruby", "perl", "php"}
)


class ExternalCheckError(RuntimeError):
    """The check's command hung, died, or answered something that is not a protocol answer."""


class AnswerError(ValueError):
    """One answer line that breaks the protocol; the message names the field and the rule."""


# --- the protocol: requests out, answers in --------------------------------------------


def look_to_api(look: Look) -> dict[str, Any]:
    """One look as a request carries it: ``at_ms`` and the machines as API objects."""
    return {"at_ms": look.at_ms, "machines": [machine_to_api(m, look.at_ms) for m in look.machines]}


def request_line(
    run: str, publish_started_ms: int, looks_json: Sequence[str], options_json: str
) -> str:
    """One request (no newline) from the looks and options already encoded as JSON."""
    head = json.dumps(
        {"protocol": PROTOCOL, "run": run, "publish_started_ms": publish_started_ms},
        separators=(",", ":"),
    )
    # Each look is encoded once per run and spliced in: a run's requests grow by one look.
    return f'{head[:-1]},"options":{options_json},"looks":[{",".join(looks_json)}]}}'


def schema(kind: str) -> dict[str, Any]:
    """The shipped JSON Schema of a ``"request"`` or an ``"answer"``."""
    text = resources.files("sim").joinpath(f"schemas/check-{kind}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _no_constant(name: str) -> Any:
    raise AnswerError(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise AnswerError(f"field {key!r} appears twice")
        obj[key] = value
    return obj


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_VERDICT_FIELDS = ("ok", "reason", "machine", "layer", "judged")


def parse_answer(text: str) -> Step:
    """A ``Wait`` or ``Verdict`` from one answer line; ``AnswerError`` says what is wrong."""
    try:
        obj = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as error:
        raise AnswerError(f"not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(obj, dict):
        raise AnswerError("must be a JSON object with one field, 'wait' or 'verdict'")
    if sorted(obj) not in (["wait"], ["verdict"]):
        raise AnswerError(f"must have exactly one field, 'wait' or 'verdict' (got {sorted(obj)})")
    if "wait" in obj:
        seconds = obj["wait"]
        if not _is_number(seconds) or not math.isfinite(seconds) or seconds < 0:
            raise AnswerError(f"field 'wait' must be a number of seconds >= 0, got {_show(seconds)}")
        return Wait(float(seconds))
    verdict = obj["verdict"]
    if not isinstance(verdict, dict):
        raise AnswerError(f"field 'verdict' must be an object, got {_show(verdict)}")
    if unknown := [k for k in verdict if k not in _VERDICT_FIELDS]:
        raise AnswerError(f"field 'verdict.{unknown[0]}' is not part of the protocol")
    rules: list[tuple[str, bool, str]] = [
        ("ok", isinstance(verdict.get("ok"), bool), "must be true or false"),
        ("reason", isinstance(verdict.get("reason"), str) and verdict.get("reason") != "",
         "must be a non-empty string"),
        ("machine", verdict.get("machine") is None or isinstance(verdict["machine"], str),
         "must be a string or null"),
        ("layer", isinstance(verdict.get("layer", ""), str), "must be a string"),
        ("judged", isinstance(verdict.get("judged", True), bool), "must be true or false"),
    ]
    for key, valid, rule in rules:
        if not valid:
            got = _show(verdict[key]) if key in verdict else "nothing"
            raise AnswerError(f"field 'verdict.{key}' {rule}, got {got}")
    return Verdict(
        verdict["ok"], verdict["reason"], verdict.get("machine"),
        layer=verdict.get("layer", ""), judged=verdict.get("judged", True),
    )


def _show(value: Any, limit: int = 60) -> str:
    """A value shortened to keep an error message on one line."""
    text = value if isinstance(value, str) else json.dumps(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the child process ------------------------------------------------------------------


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole session (it and anything it started) and reap the child."""
    # The child leads its own process group, so the group outlives it while any of its own
    # children do, and its id is not reused until then: killing the group is safe.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


class _Child:
    """One running command: write a line, read a line, within a deadline; keep stderr's tail."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            bufsize=0, start_new_session=True,
        )
        assert self.proc.stdin
        assert self.proc.stdout
        assert self.proc.stderr
        self.stdin, self.stdout, self.stderr = (
            self.proc.stdin.fileno(), self.proc.stdout.fileno(), self.proc.stderr.fileno()
        )
        for fd in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(fd, False)
        self.err = bytearray()
        self.out = bytearray()
        self.stderr_open = True
        # Whatever happens to the CommandCheck (an exception, no close, interpreter exit),
        # the child is killed and reaped.
        self.finalizer = weakref.finalize(self, _kill, self.proc)

    def _read_stderr(self) -> None:
        while self.stderr_open:
            try:
                chunk = os.read(self.stderr, 65536)
            except BlockingIOError:
                return
            if not chunk:
                self.stderr_open = False
                return
            self.err += chunk
            del self.err[:-STDERR_KEEP_BYTES]

    def stderr_tail(self) -> str:
        """The last lines the child wrote on stderr, joined into one line."""
        self._read_stderr()
        lines = [" ".join(line.split()) for line in self.err.decode("utf-8", "replace").splitlines()]
        lines = [_show(line, 200) for line in lines if line][-STDERR_TAIL_LINES:]
        return " | ".join(lines)

    def _exit_text(self) -> str:
        try:
            code = self.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return "closed its stdout"
        return f"exited with status {code}" if code >= 0 else f"was killed by signal {-code}"

    def exchange(self, line: str, timeout_s: float) -> str:
        """Send one request line and return the one answer line (without the newline)."""
        self._read_stderr()
        if self.out or self._stdout_ready():
            raise ExternalCheckError(self._unasked())
        pending = memoryview((line + "\n").encode())
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(self.stdin, selectors.EVENT_WRITE)
            selector.register(self.stdout, selectors.EVENT_READ)
            if self.stderr_open:
                selector.register(self.stderr, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ExternalCheckError(f"gave no answer within {timeout_s:g} s")
                for key, _ in selector.select(remaining):
                    if key.fd == self.stderr:
                        self._read_stderr()
                        if not self.stderr_open:
                            selector.unregister(self.stderr)
                    elif key.fd == self.stdin:
                        try:
                            written = os.write(self.stdin, pending)
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            raise ExternalCheckError(
                                f"{self._exit_text()} before reading the request"
                            ) from None
                        pending = pending[written:]
                        if not pending:
                            selector.unregister(self.stdin)
                    elif answer := self._read_answer():
                        return answer

    def _stdout_ready(self) -> bool:
        try:
            chunk = os.read(self.stdout, 65536)
        except BlockingIOError:
            return False
        if not chunk:
            raise ExternalCheckError(f"{self._exit_text()} between requests")
        self.out += chunk
        return True

    def _unasked(self) -> str:
        return f"wrote output nobody asked for: {_show(self.out.decode('utf-8', 'replace'))}"

    def _read_answer(self) -> str | None:
        try:
            chunk = os.read(self.stdout, 65536)
        except BlockingIOError:
            return None
        if not chunk:
            if self.out:
                raise ExternalCheckError(
                    f"{self._exit_text()} in the middle of an answer: "
                    f"{_show(self.out.decode('utf-8', 'replace'))}"
                )
            raise ExternalCheckError(f"{self._exit_text()} before answering")
        self.out += chunk
        end = self.out.find(b"\n")
        if end < 0:
            if len(self.out) > MAX_ANSWER_BYTES:
                raise ExternalCheckError(f"wrote over {MAX_ANSWER_BYTES} bytes with no newline")
            return None
        raw, rest = bytes(self.out[:end]), self.out[end + 1 :]
        if rest:
            raise ExternalCheckError(
                f"wrote more than one line for one request: {_show(rest.decode('utf-8', 'replace'))}"
            )
        self.out.clear()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ExternalCheckError(f"answered bytes that are not UTF-8: {raw[:40]!r}") from None
        if not text.strip():
            raise ExternalCheckError("answered an empty line")
        return text

    def close(self, grace_s: float) -> None:
        """End the child: EOF on its stdin, a moment to exit, then kill what is left."""
        if not self.finalizer.alive:
            return
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        if grace_s > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace_s)
        self.finalizer()  # kills the group even when the child left something behind


# --- the check -----------------------------------------------------------------------------

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
        self._child: _Child | None = None
        self._runs = 0
        self._run = ""
        self._run_publish_ms: int | None = None
        self._looks: list[Look] = []
        self._looks_json: list[str] = []
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
            or any(a is not b and a != b for a, b in zip(fed, looks, strict=False))
        )
        if new:
            self._runs += 1
            self._run = f"run-{self._runs}"
            self._run_publish_ms = publish_started_ms
            self._looks, self._looks_json = [], []
        for look in looks[len(self._looks) :]:
            self._looks.append(look)
            self._looks_json.append(json.dumps(look_to_api(look), separators=(",", ":")))

    def next(self, publish_started_ms: int, looks: Sequence[Look]) -> Step:
        """Ask the child for the next step; ``ExternalCheckError`` if it cannot give one."""
        self._start_run_if_new(publish_started_ms, looks)
        line = request_line(self._run, publish_started_ms, self._looks_json, self._options_json)
        try:
            if self._child is None:
                try:
                    self._child = _Child(self.argv)
                except OSError as error:
                    raise ExternalCheckError(f"cannot start ({error.strerror or error})") from None
            answer = self._child.exchange(line, self.timeout_s)
            try:
                return parse_answer(answer)
            except AnswerError as error:
                raise ExternalCheckError(f"answered {_show(answer)}: {error}") from None
        except ExternalCheckError as error:
            where = f"{self.name} ({shlex.join(self.argv)}), {self._run} after {len(looks)} look(s)"
            tail = self._child.stderr_tail() if self._child is not None else ""
            self._stop(grace_s=0)
            message = f"{where}: {error}" + (f"; stderr: {tail}" if tail else "")
            raise ExternalCheckError(message) from None

    def _stop(self, grace_s: float) -> None:
        if self._child is not None:
            self._child.close(grace_s)
            self._child = None

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


def rules(names: Sequence[str]) -> dict[str, str]:
    """A one-line rule for each ``cmd:`` entry of a check list, for tables of every check."""
    specs = [parse_spec(n) for n in names if n.startswith(SPEC_PREFIX)]
    return {s.name: f"the command `{shlex.join(s.command)}` (check protocol {PROTOCOL})" for s in specs}


def close_all() -> None:
    """Close every command check still open (the command line calls this when it ends)."""
    for check in list(_LIVE):
        check.close()


# --- naming and building from the command line ------------------------------------------


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


@dataclass(frozen=True)
class CommandSpec:
    """A command check as a check list names it: ``cmd:COMMAND`` or ``cmd:{json}``."""

    command: tuple[str, ...]
    name: str
    timeout_s: float = DEFAULT_TIMEOUT_S

    def text(self) -> str:
        """The check-list spelling, readable back by ``parse_spec``."""
        return SPEC_PREFIX + json.dumps(
            {"command": list(self.command), "name": self.name, "timeout_s": self.timeout_s}
        )

    def build(self, options: Mapping[str, Any]) -> CommandCheck:
        """The check, with the options each request will carry."""
        try:
            return CommandCheck(self.command, self.name, options, self.timeout_s)
        except ValueError as error:
            raise BadInput(f"check {self.name!r}: {error}") from None


def make_spec(command: str, name: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
              where: str = "--check-cmd") -> CommandSpec:
    """Validate a command check, or raise ``BadInput`` naming ``where`` and the rule."""
    try:
        argv = split_command(command)
    except ValueError as error:
        raise BadInput(f"{where} {command!r}: cannot split it into words ({error})") from None
    if shutil.which(argv[0]) is None:
        raise BadInput(f"{where} {command!r}: no program {argv[0]!r} (not found, or not executable)")
    if not timeout_s > 0 or not math.isfinite(timeout_s):
        raise BadInput(f"--check-cmd-timeout: must be a number of seconds > 0 (got {timeout_s})")
    return CommandSpec(tuple(argv), name or derive_name(argv), timeout_s)


def parse_spec(text: str) -> CommandSpec:
    """A ``cmd:`` check-list entry: ``cmd:COMMAND``, or ``cmd:{"command": …, "name": …}``."""
    body = text[len(SPEC_PREFIX) :]
    if not body.lstrip().startswith("{"):
        return make_spec(body, where="check")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as error:
        raise BadInput(f"check {text!r}: not JSON after 'cmd:' ({error.msg})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("command"), str | list):
        raise BadInput(f"check {text!r}: needs a field 'command' (a string or a list of words)")
    if unknown := sorted(set(obj) - {"command", "name", "timeout_s"}):
        raise BadInput(f"check {text!r}: unknown field {unknown[0]!r}")
    name, timeout_s = obj.get("name"), obj.get("timeout_s", DEFAULT_TIMEOUT_S)
    if name is not None and not (isinstance(name, str) and name):
        raise BadInput(f"check {text!r}: field 'name' must be a non-empty string")
    if not _is_number(timeout_s):
        raise BadInput(f"check {text!r}: field 'timeout_s' must be a number")
    command = obj["command"]
    if isinstance(command, list):
        if not command or not all(isinstance(w, str) for w in command):
            raise BadInput(f"check {text!r}: field 'command' must be a non-empty list of strings")
        command = shlex.join(command)
    return make_spec(command, name, float(timeout_s), where="check")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--check-cmd``, ``--check-cmd-name`` and ``--check-cmd-timeout`` to a subcommand."""
    parser.add_argument(
        "--check-cmd", action="append", default=[], metavar="COMMAND",
        help="a check run as a subprocess speaking JSON Lines (docs/check-protocol.md); "
        "runs beside the --check ones (alone when there are none); repeatable",
    )
    parser.add_argument(
        "--check-cmd-name", action="append", default=[], metavar="NAME",
        help="the name of the n-th --check-cmd (default: its program, or the script an "
        "interpreter runs)",
    )
    parser.add_argument(
        "--check-cmd-timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
        help=f"the most one answer may take before the run's outcome is error "
        f"(default {DEFAULT_TIMEOUT_S:g})",
    )


def with_commands(names: Sequence[str], args: argparse.Namespace) -> list[str]:
    """The check list with each ``--check-cmd`` appended as a ``cmd:`` entry.

    With no ``names`` and no commands the list stays empty (all built-ins, as before).
    """
    commands: list[str] = args.check_cmd
    labels: list[str] = args.check_cmd_name
    if len(labels) > len(commands):
        raise BadInput(
            f"--check-cmd-name: {len(labels)} name(s) for {len(commands)} --check-cmd command(s)"
        )
    if not commands:
        return list(names)
    # Named checks alone replace the all-built-ins default, and so do commands: a user
    # asking for their command compares it with the built-ins they name.
    chosen = list(names)
    taken = {n for n in chosen if not n.startswith(SPEC_PREFIX)}
    for i, command in enumerate(commands):
        spec = make_spec(command, labels[i] if i < len(labels) else None, args.check_cmd_timeout)
        if spec.name in taken:
            raise BadInput(
                f"--check-cmd {command!r}: another check is named {spec.name!r}; "
                "give this one a name with --check-cmd-name"
            )
        taken.add(spec.name)
        chosen.append(spec.text())
    return chosen
