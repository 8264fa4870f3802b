"""Run the sept25-crash-loop scenario with every built-in check side by side."""

import sys

from sim.cli import main

if __name__ == "__main__":
    sys.exit(main(["compare", "sept25-crash-loop", *sys.argv[1:]]))
