"""Exception classes and their wire encoding.

Errors cross LUXI, RAPI and opcode results as ``[class name, [args]]``
(Ganeti's encoding), so the class names here are part of the external
interface and must not be renamed.
"""

from typing import Any

# Error codes carried as the second argument of OpPrereqError and friends
ECODE_RESOLVER = "resolver_error"
ECODE_NORES = "insufficient_resources"
ECODE_TEMP_NORES = "temp_insufficient_resources"
ECODE_INVAL = "wrong_input"
ECODE_STATE = "wrong_state"
ECODE_NOENT = "unknown_entity"
ECODE_EXISTS = "already_exists"
ECODE_NOTUNIQUE = "resource_not_unique"
ECODE_FAULT = "internal_error"
ECODE_ENVIRON = "environment_error"
ECODE_ALL = frozenset([ECODE_RESOLVER, ECODE_NORES, ECODE_TEMP_NORES,
                       ECODE_INVAL, ECODE_STATE, ECODE_NOENT, ECODE_EXISTS,
                       ECODE_NOTUNIQUE, ECODE_FAULT, ECODE_ENVIRON])


class GenericError(Exception):
    """Base class of every Ganeti error."""


class LockError(GenericError):
    """A lock could not be acquired or used as asked."""


class PidFileLockError(LockError):
    """Another process holds the pid file of this daemon."""


class HypervisorError(GenericError):
    """The hypervisor failed an operation."""


class ProgrammerError(GenericError):
    """Code was used in a way it does not support (a bug, not bad input)."""


class BlockDeviceError(GenericError):
    """A storage device operation failed."""


class ConfigurationError(GenericError):
    """The configuration is inconsistent or could not be written."""


class ConfigVersionMismatch(ConfigurationError):
    """The configuration file has a version this code does not handle."""


class ParameterError(GenericError):
    """A parameter has a bad value (used by the query engine)."""


class OpPrereqError(GenericError):
    """A prerequisite of an operation is not met (args: msg, ecode)."""


class OpExecError(GenericError):
    """Executing an operation failed."""


class PlacementError(GenericError):
    """A Placement API request is refused (args: HTTP status, detail, code).

    ``code`` is one of Placement's error codes (``placement.*``), on which
    Placement clients match; the status and detail follow Placement too.
    """

    def __init__(self, status: int, detail: str,
                 code: str = "placement.undefined_code"):
        super().__init__(status, detail, code)
        self.status = status
        self.detail = detail
        self.code = code


class WorkerError(GenericError):
    """A worker process of a parallel computation failed (its traceback)
    or exited before answering."""


class RemoteError(GenericError):
    """A node could not be reached for an operation's data."""


class OpResultError(GenericError):
    """An operation returned a result of the wrong type."""


class OpCodeUnknown(GenericError):
    """The opcode id is not known."""


class JobLost(GenericError):
    """The job is not in the queue (any more)."""


class JobCanceled(GenericError):
    """The job a client waited for was canceled (Ganeti's clients report
    it as an unhandled error)."""


class JobFileCorrupted(GenericError):
    """A job file could not be parsed."""


class ResolverError(GenericError):
    """A host name could not be resolved (args: name, errno, msg)."""


class HooksFailure(GenericError):
    """Running the hooks failed (not the hooks themselves)."""


class HooksAbort(HooksFailure):
    """A pre-operation hook failed and aborted the operation."""


class UnitParseError(GenericError):
    """A size with a unit could not be parsed."""


class ParseError(GenericError):
    """Text could not be parsed."""


class TypeEnforcementError(GenericError):
    """A value did not match the declared type of a parameter."""


class X509CertError(GenericError):
    """An X509 certificate is invalid (args: file name, message)."""


class TagError(GenericError):
    """A tag is invalid or tag limits were exceeded."""


class AddressPoolError(GenericError):
    """An address pool operation failed (network too big or small, address
    outside it, already reserved or not reserved, pool full)."""


class CommandError(GenericError):
    """An external command failed."""


class SignatureError(GenericError):
    """A signed message has no valid signature of the expected key."""


class AutoRepairError(GenericError):
    """An instance's auto-repair tags contradict each other (two repairs
    pending at once)."""


class DataCollectorError(GenericError):
    """A data collector of the monitoring daemon could not collect."""


class QmpError(GenericError):
    """A QMP command of a QEMU process failed or got no answer."""


class StorageError(GenericError):
    """A storage operation failed."""


class BindError(GenericError):
    """A daemon could not listen on its address and port (taken, not local).
    """


class NotMasterError(GenericError):
    """This node may not take or hold the master role (voting refused)."""


class QuitGanetiException(Exception):
    """Signals a daemon to stop serving (args: shutdown flag, message)."""


class JobQueueError(GenericError):
    """The job queue refused or failed an operation."""


class JobQueueDrainError(JobQueueError):
    """The queue is drained and accepts no new jobs."""


class JobQueueFull(JobQueueError):
    """The queue holds too many jobs."""


class LuxiError(GenericError):
    """The LUXI protocol was violated."""


class QueryFilterParseError(ParseError):
    """A query filter could not be parsed (args: msg, details)."""

    def GetDetails(self) -> list[str]:
        """Return the message followed by the lines pointing at the error."""
        result = [self.args[0]]
        if len(self.args) > 1:
            result.extend(str(i) for i in self.args[1:])
        return result


class FileStoragePathError(GenericError):
    """A file storage path is not allowed."""


# Errors of the LUXI and RPC clients
class ProtocolError(GenericError):
    """A message did not follow the protocol."""


class ConnectionClosedError(ProtocolError):
    """The other end closed the connection."""


class TimeoutError(ProtocolError):  # pylint: disable=redefined-builtin
    """An operation over the protocol timed out."""


class RequestError(ProtocolError):
    """The server answered a request with an error it could not encode."""


class NoMasterError(ProtocolError):
    """The master daemon could not be reached."""


class PermissionError(ProtocolError):  # pylint: disable=redefined-builtin
    """The client may not talk to the master daemon."""


class JobSubmittedException(Exception):
    """Raised by the CLI after a job was submitted without waiting."""


# Errors whose message is safe to show without a traceback
def _FindClass(name: str) -> type | None:
    obj = globals().get(name)
    if isinstance(obj, type) and issubclass(obj, Exception):
        return obj
    return None


def EncodeException(err: BaseException) -> list:
    """Encode an exception as ``[class name, [args]]`` for the wire."""
    return [err.__class__.__name__, list(err.args)]


def GetEncodedError(result: Any) -> Exception | None:
    """Decode ``[class name, args]`` into an exception, or return None."""
    if (isinstance(result, (list, tuple)) and len(result) == 2 and
            isinstance(result[0], str) and
            isinstance(result[1], (list, tuple))):
        errcls = _FindClass(result[0])
        if errcls is None:
            errcls = GenericError
            return errcls("%s: %s" % (result[0], ", ".join(
                str(a) for a in result[1])))
        return errcls(*result[1])
    return None


def MaybeRaise(result: Any) -> None:
    """Raise the exception encoded in ``result``, if it is one."""
    err = GetEncodedError(result)
    if err is not None:
        raise err


def GetErrorCode(err: Exception) -> str | None:
    """Return the Ganeti error code (``ECODE_*``) carried by ``err``."""
    if len(err.args) > 1 and err.args[1] in ECODE_ALL:
        return err.args[1]
    return None
