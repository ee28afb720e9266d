"""Implementations of the gnt-* command line tools, one module per tool."""
