"""Implementations of the gnt-* command line tools, one module per tool.

``gnt_<name>`` is the tool gnt-<name>; its docstring starts with
"<title>: <summary>", and the title names its man page
(autotools/build-man).
"""
