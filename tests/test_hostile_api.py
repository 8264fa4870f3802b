"""The test kit's doors in the Python API (issue 32): a wrong argument is one BadInput line
naming the parameter, never an AttributeError from inside the kit."""

from __future__ import annotations

import pytest

from platform_testbed.checks import Verdict, Wait
from platform_testbed.sim import api


class _Decides:
    name = "decides"

    def next(self, publish_started_ms: int, looks: list[object]) -> Wait | Verdict:
        return Verdict(True, "fine") if looks else Wait(1)


@pytest.mark.parametrize(("call", "rule"), [
    (lambda: api.world(None), r"^apps\[0\]: must be an App"),
    (lambda: api.world(api.App(), "x"), r"^apps\[1\]: must be an App"),
    (api.world, r"^apps: give at least one App"),
    (lambda: api.world(api.App(), horizon_s=float("nan")), r"^horizon_s: must be a number of seconds"),
    (lambda: api.world(api.App(), horizon_s=1e300), r"^horizon_s: .*at most"),
    (lambda: api.world(api.App(), seed=-1), r"^seed: must be a whole number"),
    (lambda: api.drive_world(None, None), r"^check: must be a check object with a next\(\) method"),
    (lambda: api.drive_world(_Decides(), None), r"^w: must be a World"),
    (lambda: api.drive_world(_Decides, api.world(api.App())), r"^check: must be a check object"),
    (lambda: api.drive_world(_Decides(), api.world(api.App()), max_looks=0), r"^max_looks: must be"),
    (lambda: api.drive_world(_Decides(), api.world(api.App()), max_looks=True), r"^max_looks: must be"),
])
def test_a_wrong_argument_is_badinput_naming_it(call: object, rule: str) -> None:
    """Each wrong argument: BadInput, one line, naming the parameter and the rule."""
    with pytest.raises(api.BadInput, match=rule) as raised:
        call()  # type: ignore[operator]
    assert "\n" not in str(raised.value)


def test_good_arguments_still_drive_the_world() -> None:
    """The door changes nothing for good arguments: the kit's own run, look for look."""
    from platform_testbed.sim.kit import testing  # noqa: PLC0415 -- the kit behind the door

    w = api.world(api.App(crash_after_ms=None), horizon_s=60, seed=3)
    assert w == testing.world(testing.App(crash_after_ms=None), horizon_s=60, seed=3)
    assert api.drive_world(_Decides(), w) == testing.drive_world(_Decides(), w)
