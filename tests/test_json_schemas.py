"""Every ``--json`` document validates against the JSON Schema shipped in ``sim/schemas/``."""

import json
from importlib import resources

import jsonschema
import pytest

from platform_testbed.sim.cli.parser import main

#: Each command's --json document: its schema's name and the arguments of a real, short run.
COMMANDS = {
    "compare": ("compare", ["compare", "sept25-crash-loop", "--runs", "2", "--json"]),
    "compare-user-options": ("compare", ["compare", "gives-up", "--check", "count",
                                         "--check-opt", "look_delay_s=5", "--json"]),
    "checks": ("checks", ["checks", "--runs", "1", "--json"]),
    "list-profiles": ("profiles", ["list", "--profiles", "--json"]),
    "series": ("series", ["series", "sept25-three-publishes", "--json"]),
    "rollout": ("rollout", ["rollout", "original", "--runs", "2", "--json"]),
    "rollout-summary": ("rollout", ["rollout", "fixed", "--runs", "2", "--summary", "--json"]),
    "lint-timing-broken": ("lint-timing", ["lint-timing", "original", "--json"]),
    "lint-timing-ok": ("lint-timing", ["lint-timing", "fixed", "--json"]),
    "hunt": ("hunt", ["hunt", "--check", "count", "--budget", "20", "--out", "found",
                      "--no-progress", "--json"]),
}

SMALL_SWEEP = """\
name = "small"
scenario = "sept25-crash-loop"
checks = ["count", "timestamp"]
seeds = 2
[axes]
"release.crash_after_s" = [2.5, 8.0]
"""


def schema(name):
    """The shipped schema ``name``, itself checked to be a valid Draft 2020-12 schema."""
    text = resources.files("platform_testbed.sim").joinpath(f"schemas/{name}.schema.json").read_text("utf-8")
    loaded = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def json_of(argv, capsys):
    """Run ``testbed ARGV`` and parse its stdout, which must be one JSON object."""
    main(argv)
    out = capsys.readouterr().out
    return json.loads(out)


def assert_valid(document, name):
    """The document validates against schema ``name`` and carries its schema_version."""
    loaded = schema(name)
    jsonschema.validate(document, loaded, cls=jsonschema.Draft202012Validator)
    assert document["schema_version"] == loaded["properties"]["schema_version"]["const"]


@pytest.mark.parametrize("case", sorted(COMMANDS))
def test_a_real_json_document_validates_against_its_shipped_schema(case, capsys, tmp_path,
                                                                    monkeypatch):
    """The command's real --json output is valid against the schema shipped for it."""
    monkeypatch.chdir(tmp_path)
    name, argv = COMMANDS[case]
    assert_valid(json_of(argv, capsys), name)


def test_sweep_json_validates_against_its_schema(capsys, tmp_path, monkeypatch):
    """`testbed sweep --json` on a small sweep of a shipped scenario is valid."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.toml").write_text(SMALL_SWEEP)
    document = json_of(["sweep", "small.toml", "--workers", "1", "--no-progress", "--json"], capsys)
    assert_valid(document, "sweep")


def test_replay_json_validates_with_and_without_expectations(capsys, tmp_path, monkeypatch):
    """`testbed replay --json` of a recording is valid, also carrying --expect's misses."""
    monkeypatch.chdir(tmp_path)
    main(["compare", "sept25-crash-loop", "--record", "looks.jsonl"])
    capsys.readouterr()
    assert_valid(json_of(["replay", "looks.jsonl", "--json"], capsys), "replay")
    document = json_of(["replay", "looks.jsonl", "--expect", "count=fail", "--json"], capsys)
    assert_valid(document, "replay")
    assert document["expectations_failed"]


def test_rollout_summary_leaves_out_the_runs_but_keeps_the_totals(capsys):
    """`rollout --summary --json` has no per-run entries; the totals count every run."""
    document = json_of(["rollout", "fixed", "--runs", "3", "--summary", "--json"], capsys)
    assert "runs" not in document
    assert document["summary"]["runs"] == 3


@pytest.mark.parametrize(
    ("name", "argv"),
    [COMMANDS["compare"], COMMANDS["rollout"], COMMANDS["hunt"]],
    ids=["compare", "rollout", "hunt"],
)
def test_a_schema_refuses_a_document_that_drifts(name, argv, capsys, tmp_path, monkeypatch):
    """The schemas are not vacuous: a renamed field or a wrong version fails validation."""
    monkeypatch.chdir(tmp_path)
    document = json_of(argv, capsys)
    for drifted in ({**document, "schema_version": 2},
                    {**{k: v for k, v in document.items() if k != "scenario"}, "scenario_name": "x"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(drifted, schema(name), cls=jsonschema.Draft202012Validator)


def test_every_json_command_has_a_shipped_schema():
    """Each subcommand that takes --json has a schema named after it in sim/schemas/."""
    from platform_testbed.sim.cli.parser import build_parser  # noqa: PLC0415

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    with_json = sorted(name for name, p in sub.choices.items()
                       if any("--json" in a.option_strings for a in p._actions))
    names = {"list": "profiles"}
    shipped = {p.name.removesuffix(".schema.json")
               for p in resources.files("platform_testbed.sim").joinpath("schemas").iterdir()}
    assert {names.get(c, c) for c in with_json} <= shipped
