"""The ground truths a run can be judged by, by name, and the sentence each output prints.

A truth decides whether a release is *bad* from the world alone, never from a check:

- ``serves`` (the default): bad if a machine of the release crashes after the publish
  (by the horizon), or the release does not serve through the window after the publish:
  one of its machines exits on its own within it (a clean exit too: an app that exits 0
  is not serving), or does not read ``started`` on the release at its end (it never
  booted, or was left asleep with nobody to wake it). A started machine is what the site
  routes to (``sim.publish.site``): with none, a live release answers 502. An SRE's
  reading: a deploy that leaves the app down is a bad one. A clean exit after the window
  is good (Fly's docs: "scale down by exiting cleanly", machine-restart-policy l.16).
- ``crash``: bad only if a machine of the release crashes after the publish (the rule
  before issue 30): a clean exit that leaves the app down counts as good.

The window is 300 s by default: flyctl's ``DefaultWaitTimeout`` (superfly/flyctl@ad0172fa
``internal/command/deploy/machines.go`` l.39, ``--wait-timeout``'s default), the longest
flyctl itself gives a machine to reach its state before it fails the deploy: a release
not serving by then is one Fly's own deploy tool would not have waited for. A run whose
horizon comes first is judged at the horizon.
"""

from __future__ import annotations

from typing import Literal

Truth = Literal["serves", "crash"]
TRUTHS: tuple[str, ...] = Truth.__args__  # type: ignore[attr-defined]
DEFAULT_TRUTH: Truth = "serves"
#: flyctl's ``DefaultWaitTimeout`` (machines.go l.39): see the module's docstring.
DEFAULT_WINDOW_S = 300.0


def window_end_s(window_s: float, publish_at_s: float, horizon_s: float) -> float:
    """When ``serves`` reads the machines: the window's end after the publish, or the horizon."""
    return min(publish_at_s + window_s, horizon_s)


def rule(truth: str, window_s: float) -> str:
    """The rule in one phrase, as every output names it."""
    if truth == "crash":
        return "bad if a machine of the release crashes after the publish"
    return (f"bad if a machine of the release crashes after the publish, exits within "
            f"{window_s:g} s of it, or is not started {window_s:g} s after it")


def label(truth: str, window_s: float) -> str:
    """The truth's name with its rule: ``serves (bad if ...)``."""
    return f"{truth} ({rule(truth, window_s)})"
