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

from platform_testbed.sim.checkcmd.check import (
    CLOSE_GRACE_S,
    DEFAULT_TIMEOUT_S,
    CommandCheck,
    close_all,
    derive_name,
    split_command,
)
from platform_testbed.sim.checkcmd.child import (
    MAX_ANSWER_BYTES,
    STDERR_KEEP_BYTES,
    STDERR_TAIL_LINES,
    ExternalCheckError,
)
from platform_testbed.sim.checkcmd.spec import (
    SPEC_PREFIX,
    CommandSpec,
    make_spec,
    parse_spec,
    rules,
    with_commands,
)
from platform_testbed.sim.checkcmd.wire import (
    PROTOCOL,
    AnswerError,
    look_to_api,
    parse_answer,
    request_line,
    schema,
)

__all__ = [
    "CLOSE_GRACE_S", "DEFAULT_TIMEOUT_S", "MAX_ANSWER_BYTES", "PROTOCOL", "SPEC_PREFIX",
    "STDERR_KEEP_BYTES", "STDERR_TAIL_LINES", "AnswerError", "CommandCheck", "CommandSpec",
    "ExternalCheckError", "close_all", "derive_name", "look_to_api",
    "make_spec", "parse_answer", "parse_spec", "request_line", "rules", "schema",
    "split_command", "with_commands",
]
