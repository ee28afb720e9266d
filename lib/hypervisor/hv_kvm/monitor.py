"""QMP, QEMU's monitor protocol, as the KVM hypervisor speaks it."""

from ganeti import errors
from ganeti.utils import qmp

# QMP counts memory in bytes, Ganeti in MiB
_MIB = 1024 * 1024


class QmpError(errors.HypervisorError):
    """A QMP command failed or the monitor did not answer."""


class QmpConnection(qmp.QmpConnection):
    """A QMP session whose failures are hypervisor errors."""

    ERROR = QmpError
