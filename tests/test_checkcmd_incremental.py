"""The check protocol's incremental mode: offered in a process's first request, taken by its
answer, and then each request carries only the new look, so a run costs linear time."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from platform_testbed.checks.model import Wait
from platform_testbed.sim.checkcmd import CommandCheck, ExternalCheckError, schema
from platform_testbed.sim.kit.testing import PUBLISH_MS, incident_looks

#: A child that rebuilds each run's looks from the requests and logs them, one line per
#: request: the run, the looks it now holds (as JSON), the request's size. With
#: ``incremental`` it takes the mode when offered; ``verdict_at`` looks it decides.
CHILD = """import json, sys
mode, log, verdict_at = sys.argv[1], open(sys.argv[2], "a"), int(sys.argv[3])
runs = {}
for line in sys.stdin:
    req = json.loads(line)
    looks = runs.setdefault(req["run"], [])
    start = req.get("looks_from", 0)
    del looks[start:]
    looks.extend(req["looks"])
    shown = looks if mode != "lean" else len(looks)  # lean: a child that costs O(1) a look
    log.write(json.dumps({"run": req["run"], "looks": shown, "bytes": len(line),
                          "keys": sorted(req)}) + "\\n")
    log.flush()
    answer = {"wait": 0}
    if len(looks) >= verdict_at:
        answer = {"verdict": {"ok": False, "reason": f"{len(looks)} looks, newest at "
                                                     f"{looks[-1]['at_ms']}"}}
    if "supports" in req and mode != "full":
        answer["incremental"] = True
    print(json.dumps(answer), flush=True)
"""


def _child(tmp_path: Path, mode: str, verdict_at: int = 10**9) -> tuple[CommandCheck, Path]:
    script, log = tmp_path / "child.py", tmp_path / f"{mode}.jsonl"
    script.write_text(CHILD)
    return CommandCheck([sys.executable, str(script), mode, str(log), str(verdict_at)]), log


def _drive(check: CommandCheck, count: int) -> list[object]:
    """Every answer of one run of ``count`` looks (the driver's way: one more look each call)."""
    looks = incident_looks(count)
    return [check.next(PUBLISH_MS, looks[:n]) for n in range(count + 1)]


def _log(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_incremental_and_full_requests_give_the_child_the_same_looks(tmp_path: Path) -> None:
    """The oracle: the looks a child rebuilds from incremental requests equal the full ones."""
    full, full_log = _child(tmp_path, "full", verdict_at=7)
    inc, inc_log = _child(tmp_path, "incremental", verdict_at=7)
    with full, inc:
        for _ in range(2):  # two runs: the second starts afresh in both modes
            assert _drive(full, 7) == _drive(inc, 7)
        assert inc.incremental
        assert not full.incremental
    full_seen, inc_seen = _log(full_log), _log(inc_log)
    assert [(r["run"], r["looks"]) for r in full_seen] == [(r["run"], r["looks"]) for r in inc_seen]
    assert "looks_from" not in full_seen[-1]["keys"]
    assert "looks_from" in inc_seen[-1]["keys"]


def test_only_the_first_request_offers_the_mode_and_every_request_fits_the_schema(
    tmp_path: Path,
) -> None:
    """``supports`` once per process; requests and answers validate against the schemas."""
    relay = tmp_path / "relay.py"
    relay.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    open(sys.argv[1], 'a').write(line)\n"
        "    answer = {'wait': 0, 'incremental': True} if 'supports' in json.loads(line) "
        "else {'wait': 1}\n"
        "    open(sys.argv[2], 'a').write(json.dumps(answer) + '\\n')\n"
        "    print(json.dumps(answer), flush=True)\n"
    )
    requests, answers = tmp_path / "req.jsonl", tmp_path / "ans.jsonl"
    with CommandCheck([sys.executable, str(relay), str(requests), str(answers)]) as check:
        _drive(check, 5)
        _drive(check, 3)
    sent = [json.loads(line) for line in requests.read_text().splitlines()]
    assert ["supports" in r for r in sent] == [True] + [False] * (len(sent) - 1)
    assert [len(r["looks"]) for r in sent] == [0, 1, 1, 1, 1, 1, 0, 1, 1, 1]
    assert [r["looks_from"] for r in sent[1:]] == [0, 1, 2, 3, 4, 0, 0, 1, 2]
    for request in sent:
        jsonschema.validate(request, schema("request"))
    for line in answers.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema("answer"))


def test_a_child_that_does_not_opt_in_gets_every_look_as_before(tmp_path: Path) -> None:
    """Compatible: no ``incremental`` in the first answer, full requests, no new field."""
    check, log = _child(tmp_path, "full")
    with check:
        _drive(check, 4)
    seen = _log(log)
    assert [len(r["looks"]) for r in seen] == [0, 1, 2, 3, 4]
    assert all("looks_from" not in r["keys"] for r in seen)
    assert "supports" in seen[0]["keys"]


def test_a_restarted_child_is_offered_the_mode_again_with_every_look(tmp_path: Path) -> None:
    """A new process knows nothing of the run: its first request is full and offers the mode."""
    check, log = _child(tmp_path, "incremental")
    looks = incident_looks(4)
    with check:
        for n in range(3):
            check.next(PUBLISH_MS, looks[:n])
        check._stop(grace_s=0)  # as after a cut-short exchange
        assert check.next(PUBLISH_MS, looks[:3]) == Wait(0.0)
        check.next(PUBLISH_MS, looks[:4])
    seen = _log(log)
    assert [len(r["looks"]) for r in seen] == [0, 1, 2, 3, 4]
    assert "supports" in seen[3]["keys"]
    assert "looks_from" not in seen[3]["keys"]
    assert "looks_from" in seen[4]["keys"]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ('{"wait": 0, "incremental": "yes"}', r"field 'incremental' must be true"),
        ('{"wait": 0, "incremental": false, "x": 1}', r"field 'incremental' must be true"),
    ],
)
def test_a_bad_opt_in_is_a_protocol_error(tmp_path: Path, answer: str, message: str) -> None:
    """Only ``true`` takes the mode; anything else ends the run as error, naming the field."""
    script = tmp_path / "bad.py"
    script.write_text(f"import sys\nfor line in sys.stdin:\n    print({answer!r}, flush=True)\n")
    with CommandCheck([sys.executable, str(script)]) as check, \
            pytest.raises(ExternalCheckError, match=message):
        check.next(PUBLISH_MS, [])


def test_an_opt_in_nobody_offered_is_a_protocol_error(tmp_path: Path) -> None:
    """``incremental`` in the answer to a later request is refused: the offer came once."""
    script = tmp_path / "late.py"
    script.write_text(
        "import json, sys\n"
        "for i, line in enumerate(sys.stdin):\n"
        "    print(json.dumps({'wait': 0} if i == 0 else {'wait': 0, 'incremental': True}), "
        "flush=True)\n"
    )
    looks = incident_looks(1)
    with CommandCheck([sys.executable, str(script)]) as check:
        check.next(PUBLISH_MS, [])
        with pytest.raises(ExternalCheckError, match=r"belongs only in the answer to a process's"):
            check.next(PUBLISH_MS, looks)


def test_two_thousand_looks_cost_linear_time_in_the_incremental_mode(tmp_path: Path) -> None:
    """Each request is one look's size, and the last 200 looks cost what the first 200 did.

    Quadratic (the full mode) makes the last 200 about 19 times the first 200; the bound is 5.
    """
    check, log = _child(tmp_path, "lean")
    looks = incident_looks(2_000)
    times: list[float] = []
    with check:
        for n in range(len(looks) + 1):
            started = time.perf_counter()
            check.next(PUBLISH_MS, looks[:n])
            times.append(time.perf_counter() - started)
    sizes = [r["bytes"] for r in _log(log)[2:]]
    assert max(sizes) - min(sizes) < 40  # one look each: only the digits of the index grow
    first, last = sum(times[1:201]), sum(times[-200:])
    assert last < 5 * first, (first, last)
