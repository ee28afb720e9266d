"""Logical Units: one class per opcode (``OpXxx`` runs ``LUXxx``).

Every module of this package is searched for LU classes, so a new module
of LUs needs no registration.
"""

import importlib
import pkgutil

from ganeti import errors
from ganeti.cmdlib.base import LogicalUnit


def _CollectLUs() -> dict[str, type[LogicalUnit]]:
    result: dict[str, type[LogicalUnit]] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module("%s.%s" % (__name__, info.name))
        for name, obj in vars(module).items():
            if (name.startswith("LU") and isinstance(obj, type) and
                    issubclass(obj, LogicalUnit) and
                    obj.__module__ == module.__name__):
                result[name] = obj
    return result


_LU_CLASSES = _CollectLUs()


def GetLUClass(op_id: str) -> type[LogicalUnit]:
    """The LU running an opcode, by Ganeti's naming rule (Op -> LU)."""
    from ganeti import opcodes
    op_class = opcodes.OP_MAPPING.get(op_id)
    lu_class = None
    if op_class is not None:
        lu_class = _LU_CLASSES.get("LU" + op_class.__name__[2:])
    if lu_class is None:
        raise errors.OpCodeUnknown("Unknown opcode %s" % op_id)
    return lu_class
