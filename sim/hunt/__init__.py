"""Hunting: hypothesis searches the world space for the worlds that fool a check."""
