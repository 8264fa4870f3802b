#!/usr/bin/env bash
# Build the wheel, install it into a fresh venv outside the checkout, and run every command
# there from a temporary folder: what a user of `pip install` gets (issue 13).
# Usage: tools/wheel_smoke.sh PYTHON   (any Python 3.11+: make test passes $(PYTHON), so the smoke
# runs beside the install of .venv; make wheel-smoke passes the project's .venv python).
# Nothing here uses the project's .venv: the fresh venv's own pip builds and installs.
set -euo pipefail

python=$(command -v "${1:-python3}") || { echo "wheel-smoke: no python ${1:-python3}" >&2; exit 1; }
case $python in /*) ;; *) python=$PWD/$python ;; esac  # the steps below run from elsewhere
checkout=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/testbed-wheel-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS

step() { printf "\n== %s (at %d s)\n" "$*" "$((SECONDS - started))" >&2; }
fail() { printf 'wheel-smoke: %s\n' "$*" >&2; exit 1; }

step "a fresh venv with its own pip (as a user's), which builds the wheel"
# Its own pip, not the project's: make test starts the smoke before .venv exists.
"$python" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip)
"${pip[@]}" wheel --quiet --no-deps --wheel-dir "$work/dist" "$checkout" 2>"$work/build.log" \
  || { cat "$work/build.log" >&2; fail "the wheel did not build"; }
wheel=$(ls "$work"/dist/*.whl)
echo "$(basename "$wheel")" >&2

step "the wheel and its pinned dependencies (no extras) into the fresh venv"
"${pip[@]}" install --quiet -c "$checkout/constraints.txt" "$wheel"
testbed=$work/venv/bin/testbed

# From here on nothing may come from the checkout: a folder of its own, no PYTHONPATH.
mkdir "$work/cwd" && cd "$work/cwd"
unset PYTHONPATH TESTBED_SCENARIOS
where=$("$work/venv/bin/python" -c 'import platform_testbed.sim as sim; print(sim.__file__)')
case $where in "$work"/venv/*) ;; *) fail "sim imported from $where, not the venv" ;; esac

run() { printf '$ testbed %s\n' "$*" >&2; "$testbed" "$@"; }
expect_exit() {  # expect_exit STATUS ARGS...: the command must end with STATUS
  local want=$1; shift
  printf '$ testbed %s   (exit %s expected)\n' "$*" "$want" >&2
  set +e; "$testbed" "$@"; local got=$?; set -e
  [ "$got" = "$want" ] || fail "testbed $*: exit $got, expected $want"
}

step "commands"
run --version
run list | tee list.txt
grep -q 'sept25-crash-loop' list.txt || fail "testbed list: no sept25-crash-loop"
grep -q 'fixed' list.txt || fail "testbed list: no rollout 'fixed'"
run list --profiles --json > profiles.json
run compare sept25-crash-loop
run checks --runs 2
cat > small-sweep.toml <<'TOML'
name = "small"
scenario = "sept25-crash-loop"
checks = ["count", "timestamp"]
seeds = 1
[axes]
"release.crash_after_s" = [2.5, 8.0]
TOML
run sweep small-sweep.toml --workers 1 --no-progress --out small.csv
[ -s small.csv ] || fail "testbed sweep wrote no rows"
run series sept25-three-publishes
run rollout fixed --runs 2
run lint-timing fixed
run compare sept25-crash-loop --record looks.jsonl > /dev/null
run replay looks.jsonl --expect count=pass --expect timestamp=fail --junit replay.xml
grep -q '<testsuites' replay.xml || fail "replay --junit wrote no report"
expect_exit 1 hunt --check count --budget 20 --out found --no-progress
ls found/*.toml > /dev/null || fail "testbed hunt wrote no scenario file"
expect_exit 2 compare no-such-scenario

step "shell completion (argcomplete, installed as a dependency of the wheel)"
for shell in bash zsh fish; do run completion "$shell" > "completion.$shell"; done
grep -q 'complete .*-F _python_argcomplete testbed' completion.bash || fail "no bash completion"
grep -q 'complete --command testbed' completion.fish || fail "no fish completion"
# As the shell asks: testbed run with _ARGCOMPLETE set answers with the candidates.
line="testbed compare sept"
_ARGCOMPLETE=1 _ARGCOMPLETE_IFS=' ' COMP_LINE="$line" COMP_POINT=${#line} \
  _ARGCOMPLETE_STDOUT_FILENAME=candidates.txt "$testbed"
grep -q 'sept25-crash-loop' candidates.txt || fail "completing '$line': $(cat candidates.txt)"

step "a user's project with its own checks/ and sim/: the CLI, the Python API, pytest with the kit"
# pytest, as a user's CI has it (hypothesis, for sim.kit.strategies, is a dependency).
"${pip[@]}" install --quiet -c "$checkout/constraints.txt" pytest
# The harness is the checkout's (stdlib only, run by the given python); everything it
# runs is the wheel's venv, from inside a project folder it makes (tools/user_project.py).
"$python" "$checkout/tools/user_project.py" "$work/venv/bin" || fail "the user-project run failed"

printf '\nwheel-smoke: ok in %d s (%s)\n' "$((SECONDS - started))" "$(basename "$wheel")" >&2
