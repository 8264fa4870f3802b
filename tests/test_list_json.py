"""``testbed list --json``: only the event profiles have a JSON form; the scenario list refuses it."""

from __future__ import annotations

import json

import pytest

from platform_testbed.sim.cli.parser import main


def test_list_json_without_profiles_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``list --json`` exits 2 with one line naming --json, rather than printing text."""
    assert main(["list", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "testbed: --json: needs --profiles (the scenario listing is text only)")


def test_list_profiles_json_is_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    """``list --profiles --json`` prints one JSON object with its schema version."""
    assert main(["list", "--profiles", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema_version"] == 1
    assert document["default"] in {p["name"] for p in document["profiles"]}
