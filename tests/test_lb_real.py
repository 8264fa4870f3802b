"""The rolling-deploy model against real HAProxy (issue 23): the mapping, the log, the scaling,
and a short real run (one configuration, two deploys, well under a minute).

The real run needs HAProxy: installed here when missing and running as root (a clean CI
machine), skipped with the reason when not root and missing.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from platform_testbed.sim.rollout.real.figures import Comparison, Spread, table
from platform_testbed.sim.rollout.real.haproxy import (
    Balancer,
    HaproxyMissing,
    ensure_haproxy,
    parse_log,
    render_config,
)
from platform_testbed.sim.rollout.real.harness import compare
from platform_testbed.sim.rollout.real.variants import (
    STANDARD,
    TIME_FIELDS,
    Variant,
    model_deploys,
    model_unscaled,
    scaled,
    start_delays,
)
from platform_testbed.sim.rollout.world import run as model_run

ORIGINAL = STANDARD[0]
#: A row of docs/rollout.md's real-vs-model table: configuration, real column, model column (its
#: 100 seeds say which table it is: the page's other tables have the same first column).
ROW = re.compile(r"^\| (original|intermediate|fixed) \| [^|]+ \| ([^|]+?, n=100\)) \|", re.M)


def test_config_maps_the_health_check_numbers() -> None:
    scn = scaled(ORIGINAL, 20)
    b = Balancer(scn.balancer.interval_s, scn.balancer.unhealthy_threshold,
                 scn.balancer.healthy_threshold)
    cfg = render_config(b, 8000, [8001, 8002, 8003], "/tmp/x.sock")
    # original: 30 s x 2, healthy after 5; at 1/20: inter 1.5 s.
    assert "default-server check inter 1500ms fall 2 rise 5" in cfg
    assert "bind 127.0.0.1:8000" in cfg
    assert cfg.count("server s") == 3
    assert "127.0.0.1:8003" in cfg
    assert "retries 0" in cfg
    assert "redispatch" not in cfg
    assert "http-check expect status 200" in cfg
    # One thread: a second one drops a log line when they collide on the log's fd.
    assert "nbthread 1" in cfg


def test_log_tells_losses_apart_by_termination_state() -> None:
    lines = [
        "1700000000 123 fleet s1 200 -- 0 3 /",
        "1700000000 124 fleet s2 503 SC 0 0 /",  # connection refused: reached no server
        "1700000000 125 fleet <NOSRV> 503 SC 0 0 /",  # none in rotation
        "1700000000 126 fleet s3 502 SH 0 5 /",  # the server closed before answering
        "1700000000 127 fleet s1 200 -- +1 3 /",  # served after a redispatch
        "1700000000 128 fleet s1 404 -- 0 3 /",  # an answer, not a loss
        "Server fleet/s1 is DOWN, reason: Layer4 connection problem",
    ]
    tally = parse_log(lines)
    assert tally.served == 2
    assert tally.lost == 3
    assert tally.lost_by_code == {"503 SC": 1, "503 SC NOSRV": 1, "502 SH": 1}
    assert tally.other == 1
    assert tally.retried == 1
    assert tally.requests == 6


def test_scaling_divides_every_time_and_multiplies_the_rate() -> None:
    base, small = scaled(ORIGINAL, 1), scaled(ORIGINAL, 20)
    for key in TIME_FIELDS:
        table_name, _, name = key.rpartition(".")
        a = getattr(getattr(base, table_name) if table_name else base, name)
        b = getattr(getattr(small, table_name) if table_name else small, name)
        assert b == pytest.approx(a / 20), key
    assert small.traffic.rps == pytest.approx(base.traffic.rps * 20)


@pytest.mark.parametrize("variant", STANDARD, ids=lambda v: v.name)
def test_model_at_scaled_timings_predicts_what_it_does_unscaled(variant: Variant) -> None:
    seeds = range(30)
    assert [f.lost for f in model_deploys(variant, 20, seeds)] == model_unscaled(variant, seeds)


def test_start_delays_are_the_models_own() -> None:
    scn = scaled(ORIGINAL, 20)
    for seed in range(5):
        result = model_run(scn, seed)
        delays = start_delays(scn, seed)
        for i, step in enumerate(result.trace.steps):
            # The model's server i listens again at compose_up + its start time.
            back = next(s.at_s for s in result.trace.segments
                        if s.at_s > step.compose_up_at_s and s.listening[i])
            assert back == pytest.approx(step.compose_up_at_s + delays[i])


def test_table_names_each_configuration() -> None:
    assert Spread.of([1, 3]).text() == "2.00 ± 1.41 (1–3, n=2)"
    model = model_deploys(ORIGINAL, 20, range(3))
    text = table([Comparison(ORIGINAL, 20, model[:2], model, [m.lost for m in model])])
    assert "| original |" in text
    assert "+0.00 (± 0.00)" in text


def test_short_real_run_loses_requests_as_the_model_does() -> None:
    """original at 1/40 timings, two deploys at once: both sides lose requests, every
    request is accounted for, and every loss is one HAProxy made (503 SC: refused)."""
    try:
        haproxy = ensure_haproxy()
    except HaproxyMissing as error:
        pytest.skip(str(error))
    [c] = compare([ORIGINAL], factor=40, deploys=2, model_seeds=20, haproxy=haproxy, jobs=2)
    for r in c.real:
        assert r.detail["deploy"] == "succeeded"
        assert r.lost > 0
        assert r.detail["other"] == 0
        assert r.detail["dropped_logs"] == 0
        # What the client got, should they differ: an "error" is a request no answer reached.
        assert r.requests == r.detail["client_sent"], r.detail["client"]
        # A server logs a request when it answers; one in flight when the old process exits
        # is logged there but reaches the client as HAProxy's 502 SH.
        in_flight = r.detail["lost_by_code"].get("502 SH", 0)
        assert r.served <= r.detail["served_at_servers"] <= r.served + in_flight
        assert set(r.detail["lost_by_code"]) <= {"503 SC", "502 SH", "503 SC NOSRV"}
    assert all(m.lost > 0 for m in c.model[:2])
    assert c.spread("model", "lost").mean > 5


def test_readme_model_column_is_what_the_model_gives_now() -> None:
    """docs/rollout.md's real-vs-model table: its model column (deterministic) is today's model
    at 1/20 timings over seeds 0-99; the real column is a measurement and is not re-run."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "rollout.md").read_text(encoding="utf-8")
    found = ROW.findall(page)
    rows = dict(found)
    assert len(found) == len(rows) == len(STANDARD), found
    for variant in STANDARD:
        model = Spread.of([f.lost for f in model_deploys(variant, 20, range(100))])
        assert rows[variant.name] == model.text(), variant.name


def test_missing_haproxy_without_root_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(HaproxyMissing, match="not root: apt-get install -y haproxy"):
        ensure_haproxy()
