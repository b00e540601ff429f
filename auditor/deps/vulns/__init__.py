"""Vulnerability sources behind one interface: an offline OSV snapshot, pip-audit, none."""
