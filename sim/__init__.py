"""The simulated platform: machines, event lists, the publish pipeline, traffic, the CLI."""
