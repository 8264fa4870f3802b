"""Run the sleeping-api-flyctl scenario with every built-in check side by side."""

import sys

from platform_testbed.sim.cli.parser import main

if __name__ == "__main__":
    sys.exit(main(["compare", "sleeping-api-flyctl", *sys.argv[1:]]))
