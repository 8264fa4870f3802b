"""Checks by name, and the budget (time, looks) a user's check runs under."""
