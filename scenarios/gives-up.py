"""Run the gives-up scenario with every built-in check side by side."""

import sys

from platform_testbed.sim.cli.parser import main

if __name__ == "__main__":
    sys.exit(main(["compare", "gives-up", *sys.argv[1:]]))
