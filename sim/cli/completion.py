"""Shell completion for bash, zsh and fish, through argcomplete: ``testbed completion SHELL``.

argcomplete (kislyuk/argcomplete, maintained since 2012) reads the argparse parser itself,
so every subcommand and option completes as it is declared, with no script to keep in
step by hand. The shell asks by running ``testbed`` with ``_ARGCOMPLETE`` set; ``hook``
answers and exits before any command runs. Positional names complete from the shipped
files (scenarios, rollouts, sweeps, series) and any ``.toml`` beside them; ``--check``
from the built-in checks. Everything a Tab needs is light (``sim.config.shipped``, ``checks``):
the model is never imported to answer one.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable
from typing import Any

SHELLS = ("bash", "zsh", "fish")
#: What a user sources, per shell (README "Shell completion").
HOW = {
    "bash": 'eval "$(testbed completion bash)"    # in ~/.bashrc',
    "zsh": 'eval "$(testbed completion zsh)"     # in ~/.zshrc, after compinit',
    "fish": "testbed completion fish | source     # in ~/.config/fish/config.fish",
}

Completer = Callable[..., Iterable[str]]


def _names(kind: str) -> Completer:
    """Shipped names (``sim.config.shipped``'s function ``kind``), then ``.toml`` files and
    folders under the prefix typed so far."""

    def complete(prefix: str, **_: Any) -> list[str]:
        from argcomplete.completers import FilesCompleter  # noqa: PLC0415 -- only when asked

        from platform_testbed.sim.config import shipped  # noqa: PLC0415 -- importlib.resources: a Tab's

        names = [n for n in getattr(shipped, kind)() if n.startswith(prefix)]
        return names + [str(p) for p in FilesCompleter(("toml",))(prefix)]

    return complete


def _checks(prefix: str, **_: Any) -> list[str]:
    from platform_testbed.checks import BUILTIN_CHECKS  # noqa: PLC0415 -- only for a Tab on --check

    return [name for name in BUILTIN_CHECKS if name.startswith(prefix)]


#: (subcommand, argument dest) -> completer. A dest no subcommand has is a test failure.
COMPLETERS: dict[tuple[str, str], Completer] = {
    ("compare", "scenario"): _names("shipped"),
    ("hunt", "scenario"): _names("shipped"),
    ("rollout", "scenario"): _names("shipped_rollouts"),
    ("lint-timing", "config"): _names("shipped_rollouts"),
    ("sweep", "sweep"): _names("shipped_sweeps"),
    ("series", "series"): _names("shipped_series"),
    **{(command, "check"): _checks for command in ("compare", "replay", "checks", "series", "hunt")},
}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def attach(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """Give each argument in COMPLETERS its completer; returns the (command, dest) attached."""
    attached = []
    for command, sub in _subcommands(parser).items():
        for action in sub._actions:
            completer = COMPLETERS.get((command, action.dest))
            if completer is not None:
                action.completer = completer  # type: ignore[attr-defined]  # argcomplete reads it
                attached.append((command, action.dest))
    return attached


def hook(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request, if this run is one (argcomplete exits then)."""
    if "_ARGCOMPLETE" not in os.environ:
        return  # an ordinary run: argcomplete is not even imported
    import argcomplete  # noqa: PLC0415

    attach(parser)
    argcomplete.autocomplete(parser)


def add_completion_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``completion {bash,zsh,fish}``: print the script that shell sources."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "completion",
        help="print the shell completion script for bash, zsh or fish",
        description="Print the script that makes SHELL complete testbed's subcommands,\n"
        "options, scenario names and check names.",
        # Raw, so each shell's line stays a line of its own (argparse refills paragraphs).
        epilog="examples:\n  testbed completion bash\n  testbed completion zsh > _testbed"
        "\n\nto install it:\n" + "\n".join(f"  {HOW[s]}" for s in SHELLS),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(handler=cmd_completion)
    return parser


def script(shell: str) -> str:
    """The completion script for ``shell``, as argcomplete writes it for ``testbed``."""
    from argcomplete.shell_integration import shellcode  # noqa: PLC0415 -- only for this command

    # zsh runs argcomplete's bash script, which detects zsh and registers with compdef.
    return shellcode(["testbed"], shell=shell)


def cmd_completion(args: argparse.Namespace) -> int:
    """Print the completion script for the shell asked for."""
    print(script(args.shell), end="")
    return 0
