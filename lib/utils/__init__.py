"""Utility functions, grouped in submodules by what they work on.

The most used helpers are re-exported here so callers can write
``utils.WriteFile`` as in Ganeti.
"""

from ganeti.utils.io import (  # noqa: F401
    EnsureDirs, FsyncDirectory, IsBelowDir, ListVisibleFiles, LockFile,
    ReadFile, ReadOneLineFile, ReadWatcherPauseFile, RemoveFile, RenameFile,
    WriteFile)
from ganeti.utils.text import (  # noqa: F401
    FormatUnit, NiceSort, NiceSortKey, ParseUnit)
