"""Print the mutation score over killable mutants: every mutant but the equivalent ones.

Run after ``mutmut run`` (``make mutate``). A mutant is killable unless tests/MUTANTS.md
lists it as equivalent (a line starting ``- `<mutant id>```). Killed counts mutmut's
killed, timed-out and type-check-caught mutants; survivors and mutants no test reached
count against the score. An equivalent mutant that was killed after all is an error in
MUTANTS.md, and so is one listed that this run did not produce: both exit 1.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from mutmut.stats import status_by_exit_code

KILLED = {"killed", "timeout", "caught by type check"}
LISTED = re.compile(r"^- `([^`]+)`", re.MULTILINE)


def statuses(mutants: Path) -> dict[str, str]:
    """Every mutant's status from mutmut's per-file results."""
    found: dict[str, str] = {}
    for meta in sorted(mutants.rglob("*.meta")):
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            found[name] = status_by_exit_code[code]
    return found


def main() -> int:
    """Print the score line; list the killable survivors and any error in MUTANTS.md."""
    found = statuses(Path("mutants"))
    equivalent = set(LISTED.findall(Path("tests/MUTANTS.md").read_text()))
    errors = [
        f"MUTANTS.md lists {name}, which this run did not produce" for name in sorted(equivalent - set(found))
    ]
    errors += [
        f"MUTANTS.md lists {name} as equivalent, but it was {found[name]}"
        for name in sorted(equivalent & set(found))
        if found[name] in KILLED
    ]
    killable = {name: status for name, status in found.items() if name not in equivalent}
    killed = sum(status in KILLED for status in killable.values())
    for name, status in sorted(killable.items()):
        if status not in KILLED:
            print(f"{status}: {name}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    total = len(killable)
    print(f"{len(found)} mutants, {len(found) - total} of them equivalent (tests/MUTANTS.md)")
    print(f"mutation score: {killed}/{total} killable killed = {100 * killed / total:.1f}%")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
