"""The helpers the notebook plots from: one server's timeline and the 502 grid."""

from __future__ import annotations

from platform_testbed.sim.rollout import load, run
from platform_testbed.sim.rollout.sweep import bad_gateway_grid
from platform_testbed.sim.rollout.timeline import server_timeline


def test_server_timeline_shades_the_502_window_of_the_original() -> None:
    """In the original config the 502 window runs from stop-listening to leaving rotation."""
    timeline = server_timeline(run(load("original"), 0), 0)
    window = timeline.bad_gateway_window
    assert window is not None
    assert window[0] == timeline.stop_listening_at_s == timeline.drain_at_s + 5
    assert timeline.out_of_rotation_at_s is not None
    assert window[1] == timeline.out_of_rotation_at_s
    assert timeline.bad_gateway > 0
    assert timeline.probes[0][1] == "ok"


def test_server_timeline_of_the_fixed_config_has_no_502_window() -> None:
    """In the fixed config the balancer drops the server before it stops listening."""
    result = run(load("fixed"), 0)
    for index in range(3):
        timeline = server_timeline(result, index)
        assert timeline.bad_gateway_window is None
        assert timeline.out_of_rotation_at_s is not None
        assert timeline.out_of_rotation_at_s < timeline.stop_listening_at_s
        assert timeline.back_in_rotation_at_s is not None


def test_sweep_grid_is_zero_where_the_drain_invariant_holds() -> None:
    """The 502 grid is zero for serve > interval x threshold and positive far below it."""
    grid = bad_gateway_grid(load("fixed"), [0, 25], [5, 30], seeds=range(3))
    assert grid.unhealthy_threshold == 2
    assert grid.mean[0][1] == 0
    assert grid.mean[1][0] > 0
