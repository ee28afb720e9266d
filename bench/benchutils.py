"""What the pure-library benchmarks share: importing ``ganeti`` without
the project venv (from the checkout's lib/)."""

import importlib.util
import os
import sys


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
