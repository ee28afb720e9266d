"""What the pure-library benchmarks share: importing ``ganeti`` without
the project venv (from the checkout's lib/), and timing."""

import importlib.util
import os
import statistics
import sys
import time
from typing import Any, Callable


def ImportGaneti() -> None:
    """Make ``ganeti`` importable when not run from the project venv."""
    try:
        import ganeti  # noqa: F401
    except ImportError:
        libdir = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              os.pardir, "lib")
        spec = importlib.util.spec_from_file_location(
            "ganeti", os.path.join(libdir, "__init__.py"),
            submodule_search_locations=[libdir])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["ganeti"] = module
        spec.loader.exec_module(module)


def MedianTime(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median seconds of ``fn`` over ``repeat`` runs, and its last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result
