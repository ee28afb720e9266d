"""Waits and timeouts that the environment can shorten.

Each user names its variable next to the production value it overrides
(e.g. ``GANETI_IALLOCATOR_TIMEOUT``). Test clusters set them so that a
test waiting out a timeout (a hung daemon, a vote that cannot succeed)
takes a second rather than the production wait; unset, empty or not a
positive number, the production value holds.
"""

import os


def Seconds(env_var: str, default: float) -> float:
    """The seconds ``env_var`` sets, or ``default``."""
    try:
        value = float(os.environ.get(env_var, ""))
    except ValueError:
        return default
    return value if value > 0 else default
