"""The shipped rollout scenarios' printed reports are part of their test (SimPy's .out habit).

After an intended change, regenerate with
``testbed rollout NAME --runs 5 > scenarios/rollouts/NAME.out``.
"""

from __future__ import annotations

import pytest

from platform_testbed.sim.cli.parser import main
from platform_testbed.sim.rollout.config import rollouts_dir, shipped


@pytest.mark.parametrize("name", sorted(shipped()))
def test_printed_report_matches_the_saved_output(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rollout NAME --runs 5`` prints exactly scenarios/rollouts/NAME.out."""
    main(["rollout", name, "--runs", "5"])
    saved = (rollouts_dir() / f"{name}.out").read_text(encoding="utf-8")
    assert capsys.readouterr().out == saved
