"""Configuration: settings files, scenario tables, event profiles and the shipped files."""
