"""The rolling-deploy model against real parts: HAProxy, server processes, load (issue 23).

``python -m platform_testbed.sim.rollout.real`` (``make validate-lb``) runs the comparison; see
``harness.py`` for the deploy and the scaling, ``docs/rollout.md`` for the results.
"""
