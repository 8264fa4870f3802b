"""The process around a run: signals, output files written whole, optional pandas."""
