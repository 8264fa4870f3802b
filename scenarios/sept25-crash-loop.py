"""Run the sept25-crash-loop scenario with every built-in check side by side."""

import sys

from platform_testbed.sim.cli.parser import main

if __name__ == "__main__":
    sys.exit(main(["compare", "sept25-crash-loop", *sys.argv[1:]]))
