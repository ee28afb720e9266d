"""Node-to-node data transfer (Ganeti's import/export daemons).

One transfer copies one stream of bytes (a disk, later a backup file) from
a *source* on one node to a *destination* on another, for instance move
and, later, backup export and import.

Design
======

Each end of a transfer is a separate process on its node (``python -m
ganeti.impexp.transfer``), started by noded for the RPC that asked for it
(noded handles each connection in a short-lived forked child, so the
transfer can't live in noded itself). The process owns a directory
``pathutils.IMPORT_EXPORT_DIR/<name>`` holding its request (``spec``),
its locked pid file (``pid``), its ``status`` (JSON, rewritten atomically
twice a second and at the end) and its ``log``. A transfer is
identified by ``<name>``, the directory name.

* The destination (``import_start``) binds a listening socket for this
  one transfer on the address the master names (the node's primary IP;
  on a virtual cluster each node has its own 127.x.y.z) and an ephemeral
  port, in noded, before anything else: the RPC answers with the port.
  The process then accepts TLS connections until one peer presents the
  cluster certificate (checked by digest, as noded checks its clients)
  and the transfer's *magic* (a random string only the master and both
  ends know); other peers are refused and it keeps waiting, until the
  connect timeout. Once a peer is accepted the listening socket is closed.
* The source (``export_start``) connects to that address and port,
  presenting the cluster certificate and checking that the server presents
  it too, then streams its data.

Wire protocol (inside TLS), in frames of ``<type: 1 byte><length: 4
bytes, big endian><payload>``:

* ``H`` (source): JSON header ``{"magic", "compress", "size"}``, size in
  bytes if the source knows it (for progress), else null;
* ``D`` (source): data, compressed as the header says (``gzip*``: one gzip
  stream over all frames);
* ``Z`` (source): a hole of the source (8 bytes, big endian: its length),
  found with SEEK_DATA/SEEK_HOLE in a regular file instead of being read;
  the destination makes it read as zeros (a regular file keeps it a
  hole). The compressed data before it is flushed (Z_SYNC_FLUSH) first;
* ``E`` (source): end, JSON ``{"size", "sha256"}`` of the uncompressed data
  read from the source;
* ``A`` (destination): answer to ``E``, JSON ``{"success", "error"}`` after
  the destination checked size and checksum and flushed its data to disk.

Both ends compute the checksum of the uncompressed data as it passes
(``checksum`` in their status; ``sparse.StreamDigest``): the SHA-256 of
the data, or with holes the SHA-256 of the data's and the hole positions'
digests. The master compares the two as well. A source succeeds only
when the destination acknowledged the data.

Data sources and destinations (``[kind, args]``, localized by the node
that uses them, never as paths computed elsewhere):

* ``IEIO_FILE``, args a virtual path below ``pathutils.EXPORT_DIR`` (also
  after resolving symbolic links): a file (or FIFO) read, or a new file
  written (never an existing one; missing directories below the backup
  directory are created);
* ``IEIO_RAW_DISK``, args a disk dict (``objects.Disk.ToDict``): the
  node assembles the disk (``storage.Assemble``) and reads or overwrites
  its device; the destination refuses more data than the device holds.
  Zero blocks that land in a hole of a regular file are skipped, so file
  disks stay sparse;
* ``IEIO_COMMAND``, args ``{"argv": [...], "env": {...} or null}``: the
  command's standard output is the source, or its standard input the
  destination (started once the peer is accepted); a non-zero exit fails
  the transfer.

Failure and cleanup: an end that fails, times out or is aborted stops at
once, closes its sockets and removes what it created (the new file of an
``IEIO_FILE`` destination; a raw disk is left to its owner, the caller,
and a command is killed). ``impexp_abort`` stops a transfer (SIGTERM,
then SIGKILL) and also discards the file a *finished* import created, so
the master can reject data after the fact (checksum mismatch).
``impexp_cleanup`` stops a transfer still running (discarding what it
created, unless it succeeded) and removes its directory; it is
idempotent. After cleanup nothing of the transfer remains running or
listening. Timeouts end a transfer nobody cleans up, but its directory
stays until cleaned up.

RPC API (rpc_defs; the node side is ganeti.impexp.node, the master side
ganeti.impexp.master):

* ``import_start(opts, instance_name, component, dest, address)`` ->
  ``{"name", "address", "port"}``;
* ``export_start(opts, host, port, instance_name, component, source)`` ->
  ``name``;
* ``impexp_status(names)`` -> a status dict (STATUS_FIELDS) per name,
  None for an unknown name;
* ``impexp_abort(name)``, ``impexp_cleanup(name)`` -> None.

``opts`` (MakeOptions) must be the same for both ends: ``compress``
(IEC_*), ``magic``, ``connect_timeout`` (seconds to find the peer) and
``timeout`` (seconds without progress before giving up).
"""

import re
from typing import Any

from ganeti import errors

IEM_IMPORT = "import"
IEM_EXPORT = "export"
IEM_ALL = frozenset([IEM_IMPORT, IEM_EXPORT])

IEIO_FILE = "file"
IEIO_RAW_DISK = "raw"
IEIO_COMMAND = "command"
IEIO_ALL = frozenset([IEIO_FILE, IEIO_RAW_DISK, IEIO_COMMAND])

# Compression on the wire (Ganeti's IEC_* names); the cluster's
# compression_tools says which of these may be used
IEC_NONE = "none"
IEC_GZIP = "gzip"
IEC_GZIP_FAST = "gzip-fast"
IEC_GZIP_SLOW = "gzip-slow"
IEC_ALL = frozenset([IEC_NONE, IEC_GZIP, IEC_GZIP_FAST, IEC_GZIP_SLOW])
# A cluster's compression tools unless set otherwise
IEC_DEFAULT_TOOLS = (IEC_GZIP, IEC_GZIP_FAST, IEC_GZIP_SLOW)
# zlib level of each gzip variant
GZIP_LEVELS = {IEC_GZIP: 6, IEC_GZIP_FAST: 1, IEC_GZIP_SLOW: 9}

DEFAULT_CONNECT_TIMEOUT = 60
DEFAULT_TIMEOUT = 60

# Transfer directory names: the mode, then a tag from the instance and
# component, then a random suffix
NAME_RE = re.compile(r"^(import|export)-[A-Za-z0-9._+-]+$")
_MAGIC_RE = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
# A compression tool's name (a program name)
_TOOL_NAME_RE = re.compile(r"^[-_a-zA-Z0-9]+$")

# The status of one end (impexp_status):
STATUS_FIELDS = (
    "name",        # the transfer's name
    "mode",        # IEM_IMPORT or IEM_EXPORT
    "instance",    # instance name and component, as given at start
    "component",
    "address",     # import: listening address; export: peer address
    "port",        # import: listening port; export: peer port
    "listening",   # import: whether the listening socket is open
    "connected",   # whether the peer was accepted / reached
    "refused",     # import: peers refused (certificate, magic)
    "bytes",       # uncompressed bytes read (export) or written (import)
    "total",       # bytes expected (source size), None if unknown
    "start_time",  # time.time() when the process started, when the peer
    "connect_time",  # was accepted or reached, and when it ended
    "end_time",
    "done",        # whether the end has finished (success or not)
    "success",     # None while running
    "checksum",    # SHA-256 (hex) of the uncompressed data, when done
    "error",       # why it failed, None otherwise
)


def CheckCompressionTools(tools: list[str]) -> None:
    """Refuse compression tool lists Ganeti refuses: names must look like
    programs, gzip must be there (older nodes use it) and "none" is the
    absence of compression, not a tool."""
    illegal = [tool for tool in tools if not _TOOL_NAME_RE.match(tool)]
    if illegal:
        raise errors.OpPrereqError(
            "The tools '%s' contain illegal characters: only alphanumeric"
            " values, dashes, and underscores are allowed" %
            ", ".join(illegal), errors.ECODE_INVAL)
    if IEC_GZIP not in tools:
        raise errors.OpPrereqError(
            "For compatibility reasons, the %s utility must be present among"
            " the compression tools" % IEC_GZIP, errors.ECODE_INVAL)
    if IEC_NONE in tools:
        raise errors.OpPrereqError(
            "%s is a reserved value used for no compression, and cannot be"
            " used as the name of a tool" % IEC_NONE,
            errors.ECODE_INVAL)


def NewMagic() -> str:
    """A random magic identifying one transfer to both its ends."""
    import secrets  # loads OpenSSL's hashes: off every gnt-* start-up
    return secrets.token_urlsafe(24)


def MakeOptions(compress: str = IEC_NONE, magic: str | None = None,
                connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """The ``opts`` of one transfer (the same for both ends)."""
    return CheckOptions({"compress": compress, "magic": magic or NewMagic(),
                         "connect_timeout": connect_timeout,
                         "timeout": timeout})


def _IsPositiveNumber(value: Any) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and value > 0)


def CheckOptions(opts: Any) -> dict[str, Any]:
    """Validate transfer options; raises errors.GenericError naming the
    bad value."""
    if not isinstance(opts, dict):
        raise errors.GenericError("Invalid transfer options %r, expected a"
                                  " dictionary" % (opts,))
    unknown = sorted(set(opts) - {"compress", "magic", "connect_timeout",
                                  "timeout"})
    if unknown:
        raise errors.GenericError("Unknown transfer option(s): %s" %
                                  ", ".join(unknown))
    if opts.get("compress") not in IEC_ALL:
        raise errors.GenericError(
            "Unsupported compression %r (supported: %s)" %
            (opts.get("compress"), ", ".join(sorted(IEC_ALL))))
    if not isinstance(opts.get("magic"), str) or \
            not _MAGIC_RE.match(opts["magic"]):
        raise errors.GenericError("Invalid transfer magic %r" %
                                  (opts.get("magic"),))
    for key in ("connect_timeout", "timeout"):
        if not _IsPositiveNumber(opts.get(key)):
            raise errors.GenericError("Invalid transfer option %s=%r,"
                                      " expected a positive number of"
                                      " seconds" % (key, opts.get(key)))
    return dict(opts)


def CheckIO(mode: str, io_spec: Any) -> tuple[str, Any]:
    """Validate the shape of a source or destination ``[kind, args]``.

    What the arguments name (paths, disks) is checked by the node that
    opens them.
    """
    what = "source" if mode == IEM_EXPORT else "destination"
    if not (isinstance(io_spec, (list, tuple)) and len(io_spec) == 2):
        raise errors.GenericError("Invalid transfer %s %r, expected [kind,"
                                  " arguments]" % (what, io_spec))
    kind, args = io_spec
    if kind == IEIO_FILE:
        ok = isinstance(args, str) and args.startswith("/") and \
            "\0" not in args
    elif kind == IEIO_RAW_DISK:
        ok = isinstance(args, dict)
    elif kind == IEIO_COMMAND:
        argv = args.get("argv") if isinstance(args, dict) else None
        env = args.get("env") if isinstance(args, dict) else None
        ok = (isinstance(argv, list) and bool(argv) and
              all(isinstance(arg, str) for arg in argv) and
              set(args) <= {"argv", "env"} and
              (env is None or (isinstance(env, dict) and all(
                  isinstance(key, str) and isinstance(value, str)
                  for key, value in env.items()))))
    else:
        raise errors.GenericError("Unknown transfer %s kind %r (known: %s)" %
                                  (what, kind, ", ".join(sorted(IEIO_ALL))))
    if not ok:
        raise errors.GenericError("Invalid arguments for a %s %s: %r" %
                                  (kind, what, args))
    return kind, args


def CheckName(name: Any) -> str:
    """Refuse anything but a transfer name (it becomes a directory)."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise errors.GenericError("Invalid transfer name %r" % (name,))
    return name
