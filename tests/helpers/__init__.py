"""Helpers shared by several test modules (imported as ``helpers.<module>``; ``tests/`` is on the path)."""
