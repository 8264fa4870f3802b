"""The ``testbed`` command line: its parser, and the one place a command's end is decided.

Building the parser imports light modules only (argparse, the registry of options, the
option helpers; not ``checks``), so ``--help``, ``--version``, a mistyped option and a
shell's Tab answer at once. Each command's module, and with it the model (simpy, numpy,
pydantic, rich, hypothesis), is imported by its handler, after the Ctrl-C and SIGTERM
handlers are in place: a signal during that import ends the command as it would mid-run
(130 or 143, no traceback). ``tests/test_startup.py`` holds the parser to that.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from platform_testbed.sim.cli import completion, parsers
from platform_testbed.sim.cli.parsers import PRECEDENCE
from platform_testbed.sim.cli.quiet import quiet_handlers
from platform_testbed.sim.config.settings import BadInput, check_environment
from platform_testbed.sim.show.columns import settle_columns
from platform_testbed.sim.show.text import one_line, printable_streams

__all__ = ["PRECEDENCE", "build_parser", "main"]

EXIT_BAD_INPUT = 2
# As a shell reports a command ended by SIGINT (Ctrl-C) or SIGTERM: 128 + the signal.
EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_HUNG_UP = 130, 143, 129
#: The reader of stdout went away (``| head``): the status a shell gives a command SIGPIPE
#: ended, not 0, so under ``set -o pipefail`` a gate whose result was never read fails.
EXIT_BROKEN_PIPE = 141


class _Parser(argparse.ArgumentParser):
    """argparse with the project's contract: a one-line error and exit status 2, and no
    abbreviations (``--check-t`` is refused, not read as ``--check-timeout``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        self.words = list(sys.argv[1:] if args is None else args)  # for _suggest
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {_suggest(self, message)} (see --help)\n")


def _suggest(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse's message, with the nearest flag for an unrecognised one (did you mean)."""
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return message
    import difflib  # noqa: PLC0415 -- only for a message

    flags = [f for each in _chosen(parser) for action in each._actions for f in action.option_strings]
    hints = []
    for word in message.removeprefix(prefix).split():
        if word.startswith("--"):
            near = difflib.get_close_matches(word.partition("=")[0], flags, n=1)
            if near:
                hints.append(f"{word}: did you mean {near[0]}?")
    return message + (f" ({'; '.join(hints)})" if hints else "")


def _chosen(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser and the subcommand's parser the line named (argparse reports a flag the
    subcommand did not know from the top parser, which knows none of the subcommand's)."""
    words = getattr(parser, "words", None) or []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            named = [action.choices[w] for w in words if w in action.choices][:1]
            return [parser, *named]
    return [parser]


class _Version(argparse._VersionAction):
    """``--version``, with the installed version looked up only when it is asked for."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from platform_testbed.sim.cli import about  # noqa: PLC0415 -- importlib.metadata: tens of ms on every start

        self.version = f"%(prog)s {about.version()}"
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = _Parser(
        prog="testbed",
        description="Find the worlds in which a deploy health check gives the wrong verdict.",
        formatter_class=parsers.Formatter,
        epilog=parsers.epilog(
            ["testbed list", "testbed compare sept25-crash-loop",
             "testbed hunt --check mycheck.py:Mine", "testbed COMMAND --help"],
            parsers.VALUES, status=parsers.STATUS),
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in (*parsers.ADDERS, completion.add_completion_parser, parsers.add_serve_parser):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``testbed`` console script."""
    # Quiet handlers first: a signal while the parser is built or the line is read ends the
    # command at once (nothing has started); the model's handlers come with the command.
    previous = quiet_handlers()
    printable_streams()  # an ASCII-only terminal gets escapes, not a UnicodeEncodeError
    settle_columns()  # a bad COLUMNS is ignored, as terminals do: rich would raise on "²"
    try:
        parser = build_parser()
        completion.hook(parser)  # a shell asking for completions gets them here, and no more
        args = parser.parse_args(argv)
    finally:
        quiet_handlers(previous)
    from platform_testbed.sim.runtime.outputs import command_output  # noqa: PLC0415 -- checks loads with a command
    from platform_testbed.sim.runtime.signals import (  # noqa: PLC0415
        HungUp,
        Terminated,
        exit_on_signals,
        restore_signals,
    )

    installed = exit_on_signals()
    try:
        check_environment()  # every variable of the registry by its rule, before any work
        with command_output():  # stdout and file writes that fail: one line, exit 2
            code: int = args.handler(args)
    except KeyboardInterrupt:
        print("testbed: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except HungUp:
        print("testbed: hung up", file=sys.stderr)
        return EXIT_HUNG_UP
    except Terminated:
        print("testbed: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except BadInput as error:  # one line, whatever a name or a path in it holds
        print(f"testbed: {one_line(str(error))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say, and nothing to say it to.
        # Not 0: the command stopped before its result (a failed --expect's 1) was known.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    finally:
        restore_signals(installed)
        if "platform_testbed.sim.checkcmd" in sys.modules:  # no --check-cmd child outlives it
            sys.modules["platform_testbed.sim.checkcmd"].close_all()
    return code


if __name__ == "__main__":
    sys.exit(main())
