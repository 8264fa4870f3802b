"""The ``testbed`` command line: its parser, each command's handler, completion, launch."""
