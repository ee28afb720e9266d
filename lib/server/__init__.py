"""Daemon programs: each module has the ``main()`` of one daemon."""
