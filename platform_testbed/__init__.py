"""The platform-simulator testbed, under an import name of its own.

The product's folders stay at the top of the repository (``sim/``, ``checks/``,
``scenarios/``); this package holds them as ``platform_testbed.sim``,
``platform_testbed.checks`` and ``platform_testbed.scenarios`` (links in a checkout,
copies in the wheel), so a user's own ``checks/`` or ``sim/`` never shadows them.
"""
