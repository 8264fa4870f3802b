"""The test kit: looks and event histories by hand, a pure driver, hypothesis strategies."""
