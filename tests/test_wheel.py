"""What the wheel carries: every package and every built-in settings file (issue 13).

`make wheel-smoke` (run by `make test`) builds the wheel and runs every command from a
fresh venv; these tests catch the usual cause of a broken wheel early and cheaply.
"""

import os
import re
import shlex
import subprocess
import sys
import tomllib
import zipfile
from fnmatch import fnmatch
from pathlib import Path

from platform_testbed.sim.config import scenario
from platform_testbed.sim.publish.series import load_series
from platform_testbed.sim.rollout import config as rollout_config
from platform_testbed.sim.sweep.file import load_sweep
from tests.doc_blocks import blocks

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_python_package_in_the_checkout_is_found_for_the_wheel():
    """Packages are found, not listed (a hand list missed sim.hunt once, then sim.vtime):
    setuptools' finder, as pyproject configures it, finds every package on disk, and no
    __pycache__; pyproject lists none by hand."""
    from setuptools import find_namespace_packages  # noqa: PLC0415 -- the build's own finder

    assert set(SETUPTOOLS["packages"]) == {"find"}  # a table for the finder, not a list of names
    find = SETUPTOOLS["packages"]["find"]
    found = set(find_namespace_packages(str(ROOT), include=find["include"], exclude=find["exclude"]))
    on_disk = {
        ".".join(["platform_testbed", *p.parent.relative_to(ROOT).parts])
        for top in ("checks", "sim") for p in (ROOT / top).rglob("__init__.py")
    }
    assert on_disk <= found
    assert "platform_testbed.sim.vtime" in found
    assert not [name for name in found if "__pycache__" in name]


def test_every_built_in_settings_file_is_package_data():
    """Each .toml under scenarios/ matches a package-data glob of the package mapped onto it."""
    assert (ROOT / "platform_testbed" / "scenarios").resolve() == (ROOT / "scenarios").resolve()
    data = SETUPTOOLS["package-data"]
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        rel = path.relative_to(ROOT / "scenarios")
        package = ".".join(["platform_testbed.scenarios", *rel.parent.parts])
        assert any(fnmatch(rel.name, g) for g in data.get(package, [])), rel


def test_the_built_ins_are_found_by_name():
    """Scenarios, rollouts, sweeps and series resolve by name, as in the README."""
    assert "sept25-crash-loop" in scenario.shipped()
    assert "fixed" in rollout_config.shipped()
    assert load_sweep("sept25_unknowns").name == "sept25_unknowns"
    spec, loaded = load_series("sept25-three-publishes")
    assert len(loaded) == len(spec.publishes) == 3


def test_testbed_scenarios_overrides_where_every_built_in_is_found(tmp_path, monkeypatch):
    """TESTBED_SCENARIOS points every lookup (scenarios, rollouts, sweeps, series) elsewhere."""
    for sub in ("", "rollouts", "sweeps", "series"):
        (tmp_path / sub).mkdir(exist_ok=True)
        (tmp_path / sub / f"mine{sub}.toml").write_text("")
    monkeypatch.setenv("TESTBED_SCENARIOS", str(tmp_path))
    assert list(scenario.shipped()) == ["mine"]
    assert list(rollout_config.shipped()) == ["minerollouts"]
    assert list(scenario.shipped_sweeps()) == ["minesweeps"]
    assert list(scenario.shipped_series()) == ["mineseries"]


def test_the_metadata_names_its_authors_classifiers_and_no_redundant_extra():
    """pyproject carries authors and classifiers; no `test` extra (hypothesis is a dependency) is
    offered, and no doc tells a user to install one."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["authors"]
    assert "Framework :: Pytest" in project["classifiers"]
    assert any(d.startswith("hypothesis") for d in project["dependencies"])
    assert "test" not in project["optional-dependencies"]
    for doc in (ROOT / "docs" / "your-check.md", ROOT / "sim" / "kit" / "strategies.py", ROOT / "README.md"):
        assert "[test]" not in doc.read_text(encoding="utf-8"), doc.name


# --- the README's pip quickstart, run as printed --------------------------------------------

EXITS = re.compile(r"#.*\bexits (\d+)\b")


def _quickstart_script(install: str, commands: str, venv_python: str) -> str:
    """A bash script that runs each line of the two blocks, as printed, and checks its exit status.

    A line exits 0 unless its comment says ``exits N``; the first line that does not ends the
    script with a message naming it. Between the blocks the script moves to an empty folder,
    which is where the README says the commands run from (any folder, not the checkout).
    """
    lines = ["set -u"]

    def run(line: str) -> None:
        said = EXITS.search(line)
        want = said.group(1) if said else "0"
        lines.extend([
            f"printf '(at %d s) $ %s\\n' \"$SECONDS\" {shlex.quote(line)} >&2",
            line,
            "status=$?",
            f'[ "$status" = {want} ] || {{ printf "README quickstart: %s exited %s, expected %s\\n" '
            f'{shlex.quote(line)} "$status" {want} >&2; exit 99; }}',
        ])

    for line in install.splitlines():
        if line.strip():
            run(line)
    # What ran the commands must be the fresh venv's package, never the checkout's.
    lines.append(f'python -c "import platform_testbed as p; print(p.__file__)" | grep -q "^{venv_python}" '
                 '|| { echo "README quickstart: platform_testbed not from the fresh venv" >&2; exit 98; }')
    lines.append("mkdir empty && cd empty")
    for line in commands.splitlines():
        if line.strip():
            run(line)
    return "\n".join(lines) + "\n"


def test_the_readme_quickstart_runs_from_the_wheel_as_printed(tmp_path):
    """Build the wheel, then run the README's install block and its commands line by line, as printed."""
    named = {name: body for kind, name, body in blocks(ROOT / "README.md") if kind == "sh" and name}
    install, commands = named["quickstart-install"], named["quickstart"]
    assert "pip install" in install
    assert all(line.startswith("testbed ") for line in commands.splitlines() if line.strip())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(next(n for n in archive.namelist() if n.endswith("/METADATA"))).decode()
    assert "Classifier: Framework :: Pytest" in metadata
    assert "Author: The platform-simulator testbed authors" in metadata
    assert "Provides-Extra: test" not in metadata
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "TESTBED_SCENARIOS", "VIRTUAL_ENV", "PYTHONHOME"}}
    # The project's own .venv off the PATH: `testbed` can only come from the README's venv.
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)) and p != str(Path(sys.executable).parent))
    env["PIP_CONSTRAINT"] = str(ROOT / "constraints.txt")  # the pinned versions, as wheel_smoke.sh
    script = _quickstart_script(install, commands, str(tmp_path / "testbed-venv"))
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stderr)  # each line with the second it started at: where the time goes, with -s
    empty = tmp_path / "empty"
    assert (empty / "out" / "sept25_unknowns.csv").stat().st_size > 0
    assert sorted(p.name for p in (empty / "found").glob("*.toml"))
