"""``testbed hunt``: hypothesis searches the world space for the worlds that fool a check."""

from sim.hunt.cli import add_hunt_parser

__all__ = ["add_hunt_parser"]
