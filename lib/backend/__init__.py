"""Procedures run by the node daemon on behalf of the master.

One function per procedure of ganeti.rpc_defs, with the same name, in the
module of its family; noded calls them through PROCEDURES with the decoded
JSON arguments and sends back the return value. Expected failures raise
errors.GenericError (the message goes back to the caller); anything else
is a bug and is logged with a traceback.

Paths arrive as virtual paths (see vcluster) and are localized here. Every
procedure that writes files restricts where, since any holder of the
cluster certificate can call it.
"""

from typing import Callable

from ganeti import rpc_defs
from ganeti.backend import (disks, export, hooks, instance, node, osdef,
                            verify)

_FAMILIES = (node, verify, osdef, instance, disks, export, hooks)

# Procedure name -> the function implementing it
PROCEDURES: dict[str, Callable] = {
    name: getattr(module, name)
    for module in _FAMILIES
    for name in [*rpc_defs.CALLS_BY_NAME, *rpc_defs.JOIN_CALLS_BY_NAME]
    if hasattr(module, name)}
