"""A shipped file's name resolves with hyphens or underscores, and lists with hyphens."""

import pytest

from platform_testbed.sim.config.settings import BadInput, locate
from platform_testbed.sim.config.shipped import shipped, shipped_series, shipped_sweeps
from platform_testbed.sim.publish.series import load_series
from platform_testbed.sim.sweep.file import load_sweep


def test_sweeps_list_with_hyphens():
    """The sweep names a user sees are spelt like the scenarios' (sept25-unknowns)."""
    names = list(shipped_sweeps())
    assert "sept25-unknowns" in names
    assert all("_" not in n for n in names)


@pytest.mark.parametrize("name", ["sept25-unknowns", "sept25_unknowns"])
def test_a_sweep_resolves_in_either_spelling(name):
    """Both spellings find the one file, so the older underscore commands keep working."""
    assert load_sweep(name).name == "sept25_unknowns"
    assert shipped_sweeps()[name].name == "sept25_unknowns.toml"
    assert name in shipped_sweeps()


@pytest.mark.parametrize("name", ["sept25-three-publishes", "sept25_three_publishes"])
def test_a_series_resolves_in_either_spelling(name):
    """A series name with underscores finds the hyphenated file too."""
    spec, _ = load_series(name)
    assert len(spec.publishes) == 3


def test_a_scenario_resolves_with_underscores():
    """`sept25_crash_loop` is the shipped `sept25-crash-loop`."""
    assert locate("sept25_crash_loop", shipped, "scenario") == shipped()["sept25-crash-loop"]


def test_an_unknown_name_is_still_refused_with_the_listed_names():
    """Spelling folds `_` into `-` and nothing more: a wrong name is bad input naming the real ones."""
    with pytest.raises(BadInput, match=r"unknown sweep 'sept25-unknown' \(shipped: .*sept25-unknowns"):
        locate("sept25-unknown", shipped_sweeps, "sweep")
    assert shipped_series().get("no-such") is None
    with pytest.raises(KeyError):
        shipped_series()["no_such"]
