"""Run the healthy-release scenario with every built-in check side by side."""

import sys

from platform_testbed.sim.cli.parser import main

if __name__ == "__main__":
    sys.exit(main(["compare", "healthy-release", *sys.argv[1:]]))
