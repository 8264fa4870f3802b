#!/usr/bin/env bash
# The testbed's CI gate for this project: hunt our check, run our regression scenarios, and
# leave a JUnit report of each in reports/ (the workflow publishes them, pass or fail).
#
# Exit 0 only if every regression scenario's [expect] held and no check gave no verdict
# (error) or could not decide (undecided). Worlds the hunt finds do not fail the build: they
# are reported (reports/hunt.xml, the files in hunt-out/) for a person to read, and the ones
# worth keeping are copied into regressions/ with the outcome the check should give.
set -uo pipefail
cd "$(dirname "$0")"
CHECK=${CHECK:-mycheck.py:AnyCrash}
BUDGET=${BUDGET:-200}
mkdir -p reports
failed=0

testbed hunt --check "$CHECK" --budget "$BUDGET" --seed 0 --out hunt-out --no-progress \
  --junit reports/hunt.xml
hunted=$?
# 1 is "found worlds" (reported above); anything else (2: bad input) is a broken gate.
if [ "$hunted" -gt 1 ]; then failed=1; fi

for scenario in regressions/*.toml; do
  name=$(basename "$scenario" .toml)
  testbed compare "$scenario" --check "$CHECK" --runs 5 --summary \
    --fail-on error,undecided --junit "reports/$name.xml" || failed=1
done
exit "$failed"
