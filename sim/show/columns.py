"""COLUMNS, read as terminals and libraries read it: a bad one is ignored, a huge one clamped.

Standard library only: the command line's parser settles COLUMNS before anything heavy loads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

#: The widest COLUMNS a table is drawn at: a wider one is clamped to it.
MAX_COLUMNS = 10_000


def columns_env(environ: Mapping[str, str] = os.environ) -> int | None:
    """COLUMNS as a width, or None if unset or not a width; a huge one is ``MAX_COLUMNS``.

    As terminals and libraries (``shutil.get_terminal_size``, rich) read it: a COLUMNS that
    is not a whole number of at least 1 (``abc``, ``0``, ``-5``, ``²``) is ignored, not an
    error, so a stray export in a user's shell never stops a command.
    """
    text = environ.get("COLUMNS", "").strip()
    # "²" is a digit to isdigit() but not to int(): ASCII digits only.
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        return None
    return min(int(text), MAX_COLUMNS)


def settle_columns(environ: MutableMapping[str, str] = os.environ) -> None:
    """COLUMNS made readable by every reader of it in this process and its children.

    rich reads COLUMNS with ``isdigit()`` then ``int()``, so ``²`` raised ValueError in every
    progress bar; a bad COLUMNS is removed and a huge one clamped (``columns_env``). For the
    command line only (``sim.cli.parser.main``): a library call leaves the caller's
    environment alone.
    """
    if "COLUMNS" not in environ:
        return
    given = columns_env(environ)
    if given is None:
        del environ["COLUMNS"]
    else:
        environ["COLUMNS"] = str(given)
