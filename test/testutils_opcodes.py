"""Ganeti 3.0's opcode parameters and bodies built from them.

``data/ganeti-3.0-opcode-params.json`` lists each parameter of Ganeti
3.0.2's opcodes with its default and type (generated once from Ganeti's
opcode definitions; required parameters have a null default).
"""

import json
import os

with open(os.path.join(os.path.dirname(__file__), "data",
                       "ganeti-3.0-opcode-params.json")) as _fobj:
    GANETI_PARAMS: dict[str, dict[str, dict]] = json.load(_fobj)


def GanetiBody(op_id: str, **params) -> dict:
    """An opcode's wire dict as Ganeti's clients send it: every parameter
    of Ganeti's with its default (null for the required ones, which
    ``params`` must give), then ``params``."""
    body = {name: decl["default"]
            for name, decl in GANETI_PARAMS[op_id].items()}
    body.update(params, OP_ID=op_id)
    return body
