"""LUs of Ganeti's opcodes whose feature this cluster does not have.

Ganeti's clients may send any of its opcodes; these are accepted as jobs
(the opcode and its parameters are valid) and fail with an OpPrereqError
saying what is missing, rather than as an unknown opcode.
"""

from typing import Callable, NoReturn

from ganeti import errors
from ganeti.cmdlib.base import NoHooksLU


class _UnsupportedLU(NoHooksLU):
    """Refuses its opcode before taking any lock."""

    REQ_BGL = False
    # What the cluster lacks, completing "... is not supported: "
    REASON = ""

    def CheckArguments(self) -> NoReturn:
        raise errors.OpPrereqError("%s is not supported by this cluster: %s"
                                   % (self.op.OP_ID, self.REASON),
                                   errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> NoReturn:
        raise errors.ProgrammerError("%s must not run" % self.op.OP_ID)


class LUNodePowercycle(_UnsupportedLU):
    REASON = ("nodes are not power-cycled through their node daemon;"
              " use gnt-node power cycle (out-of-band)")


class LURestrictedCommand(_UnsupportedLU):
    REASON = "nodes run no restricted commands"
