"""The built-in settings files; installed as ``platform_testbed.scenarios`` (see pyproject.toml).

This file makes the folder a regular package so that ``importlib.resources`` finds it in an
editable install as well as in a wheel; nothing here is meant to be imported.
"""
