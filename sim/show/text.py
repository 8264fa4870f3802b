"""Text from users' checks, recordings and names, made safe for where it is printed.

Reasons, machine ids and check names come from outside (a ``--check-cmd``'s answers, a
recording, a file's name): any Unicode, lone surrogates and control characters included.
Each output escapes what it cannot hold as Python writes it (``\\x1b``, ``\\ud800``), so the
text stays readable and nothing is dropped. Standard library only: the parser imports it.
"""

from __future__ import annotations

import contextlib
import re
import sys

#: What a terminal must not be handed raw: C0 controls but tab and newline (ESC starts a
#: colour or cursor sequence), DEL and C1, the line and paragraph separators, the bidi
#: overrides (text that reads one way and is another) and lone surrogates (no encoding
#: can write them: a UnicodeEncodeError).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e"
                          "\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with each character a terminal must not get raw written as its escape (``\\x1b``)."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


#: What a one-line place (a table cell, a message on stderr) must not hold raw besides:
#: the line breaks and tabs ``printable`` keeps for prose of several lines.
_NOT_ONE_LINE = re.compile(f"[\t\n{_UNPRINTABLE.pattern[1:-1]}]")


def one_line(text: str) -> str:
    """``text`` for one line: as ``printable``, and its line breaks and tabs escaped too
    (``\\n``), so a name or a reason from outside cannot start a row or a message of its own."""
    return _NOT_ONE_LINE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def printable_streams() -> None:
    """stdout and stderr write what their encoding cannot hold as escapes, never raising.

    ``PYTHONIOENCODING=ascii`` makes the reports' ``·`` a ``\\xb7``, and a lone surrogate
    that got past ``printable`` a ``\\ud800``: escaped text, not a UnicodeEncodeError.
    JSON on stdout is ASCII already (``json.dumps`` escapes the rest).
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a closed or detached stream
                reconfigure(errors="backslashreplace")


#: What XML 1.0 cannot hold (C0 controls but tab, newline and return; lone surrogates;
#: U+FFFE and U+FFFF), and what a CI page should not show raw (DEL, C1).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` as XML can hold it: each character it cannot written as its escape (``\\x1b``)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
