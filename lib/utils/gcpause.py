"""Building large object trees without the cyclic garbage collector.

Parsing a big JSON document, loading the configuration or building a large
query result creates hundreds of thousands of lists and dicts, none of them
garbage. Each collection the allocations trigger goes over everything
created so far again, so the collector can cost more than the building.
Reference counting still frees whatever is dropped meanwhile.
"""

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def CyclicGcPaused() -> Iterator[None]:
    """Keep the cyclic garbage collector from running within the block.

    Safe with several threads using it: only a caller that found the
    collector enabled enables it again, so it ends up enabled once the
    last block is left (and earlier, which merely lets it run).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
