"""The installed distribution: what ``testbed --version`` prints."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "platform-simulator-testbed"


def version() -> str:
    """The installed version, or a word saying the code runs from an uninstalled checkout."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "(not installed)"
