"""Common start-up and shutdown of the Ganeti daemons.

Every daemon has the same life cycle, implemented once in GenericMain:

1. parse the standard options (plus the daemon's own ones);
2. ``check_fn(options, args)``: validate the environment while errors can
   still go to the terminal (exit 1 with a message, nothing forked);
3. daemonize, lock the pid file, set up logging;
4. ``prep_data = prepare_fn(options, args)``: acquire resources (bind
   sockets, load files). The process that started the daemon is still
   waiting, so a failure here is reported on its stderr and it exits 1;
5. report readiness (the starting process exits 0);
6. ``exec_fn(options, args, prep_data, stop_event)``: serve until
   ``stop_event`` (a threading.Event set on SIGTERM/SIGINT) is set.

Python runs signal handlers only in the main thread, and only between
bytecodes, so exec_fn should serve from other threads and let the main
thread block on the event::

    def ExecFoo(options, args, server, stop_event):
        server.start()          # serves in a background thread
        stop_event.wait()
        server.shutdown()

exec_fn must return soon after the event is set; GenericMain then removes
the pid file and the process exits.
"""

import logging
import logging.handlers
import optparse
import os
import signal
import sys
import threading
from typing import Any, Callable

from ganeti import constants, errors, netutils, pathutils, vcluster
from ganeti.utils import io, process

CheckFn = Callable[[optparse.Values, list[str]], None]
PrepareFn = Callable[[optparse.Values, list[str]], Any]
ExecFn = Callable[[optparse.Values, list[str], Any, threading.Event], None]

_LOG_FORMAT = ("%(asctime)s: {program} pid=%(process)d %(module)s:%(lineno)s"
               " %(levelname)s %(message)s")
_LOG_FORMAT_DEBUG = ("%(asctime)s: {program} pid=%(process)d"
                     " (%(threadName)s) %(module)s:%(lineno)s"
                     " %(levelname)s %(message)s")

# File descriptor of the locked pid file of this process, if any
_pid_fd: int | None = None


def _FormatError(err: BaseException) -> str:
    """Message of an error without the tuple formatting of multiple args."""
    if isinstance(err, errors.ResolverError) and len(err.args) == 3:
        return str(err.args[2])
    if isinstance(err, errors.GenericError) and err.args:
        return ", ".join(str(arg) for arg in err.args if arg is not None)
    return str(err) or err.__class__.__name__


def SetupLogging(logfile: str, program: str, debug: bool,
                  stderr_logging: bool) -> None:
    """Log to the daemon's own file, and to stderr in the foreground.

    WatchedFileHandler reopens the file after logrotate moved it, so no
    signal is needed for rotation.
    """
    fmt = (_LOG_FORMAT_DEBUG if debug else _LOG_FORMAT).format(program=program)
    formatter = logging.Formatter(fmt)
    root = logging.getLogger("")
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    file_handler = logging.handlers.WatchedFileHandler(logfile,
                                                       encoding="utf-8")
    file_handler.setFormatter(formatter)
    root.addHandler(file_handler)
    if stderr_logging:
        stderr_handler = logging.StreamHandler(sys.stderr)
        stderr_handler.setFormatter(formatter)
        root.addHandler(stderr_handler)


def _DefaultBindAddress() -> str:
    """Nodes of a virtual cluster share the host, so each binds its own IP."""
    if vcluster.IsVirtual():
        return netutils.GetHostIP(netutils.GetMyName())
    return "0.0.0.0"


def _AfterForkInChild() -> None:
    """A forked worker is not the daemon: no pid file, default signals.

    Without this, a worker would keep the pid file locked after the daemon
    exited (blocking a restart), and SIGTERM would only set the parent's
    stop event in the worker's copy instead of ending it.
    """
    global _pid_fd  # pylint: disable=global-statement
    if _pid_fd is not None:
        os.close(_pid_fd)
        _pid_fd = None
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _Fail(wfd: int | None, daemon_name: str, message: str,
          logging_ready: bool = True,
          exit_code: int = constants.EXIT_FAILURE) -> None:
    """Report a start-up failure where the user will see it, and exit."""
    if logging_ready:
        logging.error("%s", message)
    if wfd is not None:
        process.DaemonFailed(wfd, "%s: %s" % (daemon_name, message))
    else:
        sys.stderr.write("%s: %s\n" % (daemon_name, message))
    sys.exit(exit_code)


def AddDaemonOptions(parser: optparse.OptionParser,
                     default_port: int | None = None) -> None:
    """Add the options every daemon has to its parser.

    ``default_port`` makes it a network daemon with ``-b/--bind`` and
    ``-p/--port`` options (``options.bind_address``, ``options.port``).
    The daemons build their complete parser this way so that
    autotools/build-man documents exactly what they accept.
    """
    parser.add_option("-f", "--foreground", dest="foreground",
                      action="store_true", default=False,
                      help="Don't detach from the terminal; log to stderr"
                      " as well")
    parser.add_option("-d", "--debug", dest="debug", action="store_true",
                      default=False, help="Log debug messages")
    if default_port is not None:
        parser.add_option("-b", "--bind", dest="bind_address", default=None,
                          metavar="ADDRESS",
                          help="Address to listen on (default: this node's"
                          " address on a virtual cluster, else 0.0.0.0)")
        parser.add_option("-p", "--port", dest="port", type="int",
                          default=default_port, metavar="PORT",
                          help="Port to listen on (default: %default)")


def CheckServerArgs(options: optparse.Values, args: list[str]) -> None:
    """What every HTTP daemon's check_fn refuses first: arguments, and a
    ``--max-clients`` below 1."""
    if args:
        raise errors.GenericError("Unexpected arguments: %s" %
                                  " ".join(args))
    if options.max_clients < 1:
        raise errors.GenericError("Invalid --max-clients %d: must be at"
                                  " least 1" % options.max_clients)


def GenericMain(daemon_name: str, parser: optparse.OptionParser,
                check_fn: CheckFn, prepare_fn: PrepareFn,
                exec_fn: ExecFn) -> None:
    """Run a daemon through its whole life cycle (see the module doc).

    ``parser`` has the standard options (:func:`AddDaemonOptions`); with
    ``--port`` it is a network daemon.
    """
    global _pid_fd  # pylint: disable=global-statement
    if daemon_name not in constants.DAEMONS_LOGBASE:
        raise errors.ProgrammerError("Unknown daemon %r" % daemon_name)
    options, args = parser.parse_args()

    try:
        if parser.has_option("--port"):
            if not 0 < options.port < 65536:
                raise errors.ParameterError("Invalid port %s" % options.port)
            if options.bind_address is None:
                options.bind_address = _DefaultBindAddress()
        io.EnsureDirs(pathutils.GetNodeDirectories())
        check_fn(options, args)
    except (errors.GenericError, OSError) as err:
        _Fail(None, daemon_name, _FormatError(err), logging_ready=False,
              exit_code=(constants.EXIT_NOTMASTER
                         if isinstance(err, errors.NotMasterError)
                         else constants.EXIT_FAILURE))

    logfile = pathutils.GetLogFilename(constants.DAEMONS_LOGBASE[daemon_name])
    try:
        SetupLogging(logfile, daemon_name, options.debug, options.foreground)
    except OSError as err:
        _Fail(None, daemon_name, "Can't open log file %s: %s" % (logfile, err),
              logging_ready=False)

    wfd = None if options.foreground else process.Daemonize(logfile)

    pidfile = pathutils.DaemonPidFileName(daemon_name)
    try:
        _pid_fd = process.WritePidFile(pidfile)
    except (errors.GenericError, OSError) as err:
        _Fail(wfd, daemon_name, _FormatError(err))
    os.register_at_fork(after_in_child=_AfterForkInChild)

    stop_event = threading.Event()

    def _StopHandler(signum, _frame):
        logging.info("Received %s, shutting down", signal.Signals(signum).name)
        stop_event.set()

    signal.signal(signal.SIGTERM, _StopHandler)
    signal.signal(signal.SIGINT, _StopHandler)

    try:
        try:
            prep_data = prepare_fn(options, args)
        except Exception as err:  # pylint: disable=broad-except
            logging.exception("Daemon start-up failed")
            # Before the waiting parent learns of it and exits: no stale
            # pid file may outlive the failure it reports
            io.RemoveFile(pidfile)
            _Fail(wfd, daemon_name, _FormatError(err))
        logging.info("%s started (version %s)", daemon_name,
                     constants.RELEASE_VERSION)
        if wfd is not None:
            process.DaemonReady(wfd)
        try:
            exec_fn(options, args, prep_data, stop_event)
        except Exception:  # pylint: disable=broad-except
            logging.exception("Daemon failed")
            sys.exit(constants.EXIT_FAILURE)
        logging.info("%s stopped", daemon_name)
    finally:
        io.RemoveFile(pidfile)
        if _pid_fd is not None:
            os.close(_pid_fd)
            _pid_fd = None
