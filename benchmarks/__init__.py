"""Measurements of the build and the pages (run by hand; not part of the test suite's pass/fail)."""
