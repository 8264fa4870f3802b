"""``python -m platform_testbed`` is the ``testbed`` command."""

from platform_testbed.sim.cli.launch import main

raise SystemExit(main())
