"""Ganeti: a cluster virtualization manager (Python 3 implementation)."""
