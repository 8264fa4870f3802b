"""Hypothesis profiles: ``ci`` keeps the suite fast on 2 cores; ``dev`` digs deeper."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, print_blob=True)
settings.register_profile(
    "dev", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
