"""The simulated platform: machines, their event lists, app behaviours, event profiles."""
