"""The preload library, built on first use with the machine's C compiler into a per-user cache.

The C source ships as package data (``vtime.c``); the library is compiled once per source
hash into ``$XDG_CACHE_HOME/platform-testbed/vtime/`` (``~/.cache`` by default), written to
a temporary name and renamed into place, so two runs building at once never load half a
file. No compiler, or a failed build: ``Unavailable`` with one line saying why.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

__all__ = ["CACHE_ENV", "Unavailable", "library_path", "source_text"]

#: Where the built library goes instead of the user's cache folder (tests, read-only homes).
CACHE_ENV = "TESTBED_VTIME_CACHE"
_BUILD_TIMEOUT_S = 60.0


class Unavailable(Exception):
    """Virtual time cannot run here: the one-line reason (no compiler, a failed build)."""


def source_text() -> bytes:
    """The library's C source, as shipped."""
    return resources.files(__package__).joinpath("vtime.c").read_bytes()


def _cache_folder() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "platform-testbed" / "vtime"


def library_path() -> Path:
    """The built library for this source (built now if it is not in the cache yet)."""
    source = source_text()
    digest = hashlib.sha256(source).hexdigest()[:16]
    folder = _cache_folder()
    target = folder / f"libtestbed-vtime-{digest}.so"
    if target.is_file():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise Unavailable("virtual time needs a C compiler (cc) to build its preload library; "
                          "none is on PATH (install gcc, or use --time scaled)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            src = Path(scratch) / "vtime.c"
            src.write_bytes(source)
            built = Path(scratch) / "lib.so"
            done = subprocess.run(
                [compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(src), "-ldl"],
                capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, check=False)
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["no message"])[0]
                raise Unavailable(f"virtual time: building its preload library with {compiler} "
                                  f"failed ({first}); use --time scaled")
            os.replace(built, target)  # atomic: a concurrent build renames the same bytes
    except OSError as error:
        raise Unavailable(f"virtual time: cannot build its preload library in {folder} "
                          f"({error.strerror or error}); set {CACHE_ENV} to a writable folder "
                          "or use --time scaled") from None
    except subprocess.TimeoutExpired:
        raise Unavailable(f"virtual time: {compiler} took more than {_BUILD_TIMEOUT_S:g} s "
                          "to build its preload library; use --time scaled") from None
    return target
