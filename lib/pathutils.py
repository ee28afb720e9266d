"""Every file system path used by Ganeti, in one module.

Paths are computed once at import from the build-time directories
(``./configure --localstatedir --sysconfdir``, recorded in ``_autoconf``)
and the virtual-cluster root (see vcluster), so a process started with
``GANETI_ROOTDIR`` finds the standard layout below that root.
"""

import os

from ganeti import vcluster

try:
    # Written by configure/setup.py at build time, absent from the checkout
    from ganeti import _autoconf  # type: ignore[attr-defined,unused-ignore]
    LOCALSTATEDIR = _autoconf.LOCALSTATEDIR
    SYSCONFDIR = _autoconf.SYSCONFDIR
    PREFIX = _autoconf.PREFIX
    DAEMON_UTIL = _autoconf.DAEMON_UTIL
    IALLOCATOR_SEARCH_PATH_STR = getattr(
        _autoconf, "IALLOCATOR_SEARCH_PATH",
        "/usr/local/lib/ganeti/iallocators:/usr/lib/ganeti/iallocators")
except ImportError:  # running from the source tree
    LOCALSTATEDIR = "/var"
    SYSCONFDIR = "/etc"
    PREFIX = "/usr/local"
    DAEMON_UTIL = os.path.join(os.path.dirname(os.path.dirname(
        os.path.realpath(__file__))), "daemons", "daemon-util")
    IALLOCATOR_SEARCH_PATH_STR = \
        "/usr/local/lib/ganeti/iallocators:/usr/lib/ganeti/iallocators"

_P = vcluster.AddNodePrefix

# Top level directories
DATA_DIR = _P(LOCALSTATEDIR + "/lib/ganeti")
RUN_DIR = _P(LOCALSTATEDIR + "/run/ganeti")
LOG_DIR = _P(LOCALSTATEDIR + "/log/ganeti")
LOCK_DIR = _P(LOCALSTATEDIR + "/lock")
CONF_DIR = _P(SYSCONFDIR + "/ganeti")
EXPORT_DIR = _P("/srv/ganeti/export")
SOCKET_DIR = RUN_DIR + "/socket"
CRYPTO_KEYS_DIR = RUN_DIR + "/crypto"
IMPORT_EXPORT_DIR = RUN_DIR + "/import-export"
LOG_OS_DIR = LOG_DIR + "/os"
# Runtime state of the fake hypervisor: one file per running instance
FAKE_HV_DIR = RUN_DIR + "/fake-hypervisor"
# Block devices of running instances, as given when they were started
DISK_LINKS_DIR = RUN_DIR + "/instance-disks"
# Runtime state of the KVM hypervisor (pid files, QMP and serial sockets,
# saved command lines)
KVM_HV_DIR = RUN_DIR + "/kvm-hypervisor"
# Runtime state of drbd disks (QEMU block daemons: pid files, QMP and NBD
# sockets, the FUSE-exported device files)
DRBD_RUN_DIR = RUN_DIR + "/drbd"
# One empty file per RPC call id a node daemon received (run at most once)
RPC_CALLS_DIR = RUN_DIR + "/rpc-calls"
# The shipped script attaching a KVM tap to its NIC's network, installed
# beside daemon-util; an executable KVM_IFUP_CUSTOM replaces what it does
KVM_IFUP = os.path.join(os.path.dirname(DAEMON_UTIL), "kvm-ifup")
KVM_IFUP_CUSTOM = CONF_DIR + "/kvm-ifup-custom"

# Configuration and certificates
CLUSTER_CONF_FILE = DATA_DIR + "/config.data"
NODED_CERT_FILE = DATA_DIR + "/server.pem"
NODED_CLIENT_CERT_FILE = DATA_DIR + "/client.pem"
# QEMU's x509 credentials directory for drbd disks, made from the cluster
# certificate (ca-cert.pem, server-*.pem, client-*.pem)
DRBD_TLS_DIR = DATA_DIR + "/drbd-tls"
RAPI_CERT_FILE = DATA_DIR + "/rapi.pem"
CLUSTER_DOMAIN_SECRET_FILE = DATA_DIR + "/cluster-domain-secret"
# The cluster's HMAC key (Ganeti's confd key): signs the reports of
# ganeti-mond that ganeti-maintd acts on
CONFD_HMAC_KEY = DATA_DIR + "/hmac.key"
# A node not yet in a cluster: noded's temporary certificate and join key
NODED_JOIN_CERT_FILE = DATA_DIR + "/node-join.pem"
NODED_JOIN_KEY_FILE = DATA_DIR + "/join-key"
RAPI_DATA_DIR = DATA_DIR + "/rapi"
RAPI_USERS_FILE = RAPI_DATA_DIR + "/users"
SSCONF_PREFIX = DATA_DIR + "/ssconf_"
WATCHER_PAUSEFILE = DATA_DIR + "/watcher.pause"
# The watcher's per-group state (restart counters, boot ids) and instance
# status, "%s" being the group's UUID
WATCHER_GROUP_STATE_FILE = DATA_DIR + "/watcher.%s.data"
WATCHER_GROUP_INSTANCE_STATUS_FILE = DATA_DIR + "/watcher.%s.instance-status"
FILE_STORAGE_PATHS_FILE = CONF_DIR + "/file-storage-paths"
# Path prefixes below which gnt-cluster copyfile may write (one per line)
COPYFILE_PATHS_FILE = CONF_DIR + "/copyfile-paths"
HOOKS_BASE_DIR = CONF_DIR + "/hooks"
# The commands the self-diagnose data collector may run (white-list)
NODE_DIAGNOSE_COMMANDS_DIR = CONF_DIR + "/node-diagnose-commands"
# The repair commands of live-repair incidents noded may run (white-list)
NODE_REPAIR_COMMANDS_DIR = CONF_DIR + "/node-repair-commands"
# Executables the watcher runs on every run (run-parts rules)
WATCHER_HOOKS_DIR = HOOKS_BASE_DIR + "/watcher"
DEFAULT_FILE_STORAGE_DIR = _P("/srv/ganeti/file-storage")
DEFAULT_SHARED_FILE_STORAGE_DIR = _P("/srv/ganeti/shared-file-storage")
OS_SEARCH_PATH = [_P("/srv/ganeti/os"), _P(PREFIX + "/lib/ganeti/os")]
ES_SEARCH_PATH = [_P("/srv/ganeti/extstorage")]
# Where instance allocators are looked up by name (configure's
# --with-iallocator-search-path)
IALLOCATOR_SEARCH_PATH = [_P(path) for path
                          in IALLOCATOR_SEARCH_PATH_STR.split(":") if path]
LOG_ES_DIR = LOG_DIR + "/extstorage"
# Shell patterns of the block devices the blockdev template may adopt (one
# per line); constants.ADOPTABLE_BLOCKDEV_PATTERNS without the file
BLOCKDEV_PATHS_FILE = CONF_DIR + "/blockdev-paths"

# Job queue
QUEUE_DIR = DATA_DIR + "/queue"
JOB_QUEUE_LOCK_FILE = QUEUE_DIR + "/lock"
JOB_QUEUE_VERSION_FILE = QUEUE_DIR + "/version"
JOB_QUEUE_SERIAL_FILE = QUEUE_DIR + "/serial"
JOB_QUEUE_ARCHIVE_DIR = QUEUE_DIR + "/archive"
JOB_QUEUE_DRAIN_FILE = QUEUE_DIR + "/drain"

# The watcher's lock: held while a watcher (and its group children) runs
WATCHER_LOCK_FILE = LOCK_DIR + "/ganeti-watcher.lock"
# Held while a live-repair command runs: one at a time on a node
REPAIR_COMMAND_LOCK_FILE = LOCK_DIR + "/ganeti-repair-command.lock"
# Every instance's status as the watcher last saw it ("<name> <status>")
INSTANCE_STATUS_FILE = RUN_DIR + "/instance-status"

# Sockets
MASTER_SOCKET = SOCKET_DIR + "/ganeti-master"
QUERY_SOCKET = SOCKET_DIR + "/ganeti-query"

# Logs
LOG_COMMANDS = LOG_DIR + "/commands.log"
LOG_RAPI_ACCESS = LOG_DIR + "/rapi-access.log"
LOG_WATCHER = LOG_DIR + "/watcher.log"


def GetLogFilename(daemon_log_base: str) -> str:
    """Log file of a daemon, from its log base name (``master-daemon``)."""
    return "%s/%s.log" % (LOG_DIR, daemon_log_base)


def DaemonPidFileName(daemon: str) -> str:
    """Pid file of a daemon: RUN_DIR/<daemon>.pid."""
    return "%s/%s.pid" % (RUN_DIR, daemon)


def SsconfFileName(key: str) -> str:
    """File holding one ssconf value."""
    return SSCONF_PREFIX + key


def ExportTempDir(instance_name: str) -> str:
    """Where an export of an instance is built until it is complete.

    Hidden (and renamed to ``EXPORT_DIR/<instance>`` when complete), so an
    interrupted export is never listed.
    """
    return os.path.join(EXPORT_DIR, ".%s.new" % instance_name)


def JobFileName(job_id: int, archived: bool = False,
                queue_dir: str = QUEUE_DIR) -> str:
    """Path of a live or archived job file."""
    if archived:
        return os.path.join(queue_dir, "archive",
                            str(job_id // 10000), "job-%d" % job_id)
    return os.path.join(queue_dir, "job-%d" % job_id)


# Directories created on every node, with their modes
def GetNodeDirectories() -> list[tuple[str, int]]:
    """Directories a node needs before any daemon starts."""
    return [
        (DATA_DIR, 0o755),
        (RUN_DIR, 0o775),
        (SOCKET_DIR, 0o770),
        (LOG_DIR, 0o770),
        (LOG_OS_DIR, 0o750),
        (CONF_DIR, 0o755),
        (QUEUE_DIR, 0o700),
        (JOB_QUEUE_ARCHIVE_DIR, 0o700),
        (CRYPTO_KEYS_DIR, 0o700),
        (IMPORT_EXPORT_DIR, 0o755),
        (RAPI_DATA_DIR, 0o750),
        (EXPORT_DIR, 0o750),
    ]


def DrbdSocketPath(port: int) -> str:
    """The Unix socket a drbd disk's primary exports its device on (NBD,
    export name ``disk``): KVM guests attach to it. Short: Unix socket
    paths are limited to 107 bytes."""
    return os.path.join(DRBD_RUN_DIR, "d%d.nbd" % port)


def DrbdImageSocketPath(port: int) -> str:
    """The Unix socket a drbd disk's primary serves its image daemon's
    export ``disk`` on (NBD, no TLS), while it serves no peer: KVM
    guests attach to it when it is there, one process less per write
    than through DrbdSocketPath (storage.drbd_daemon)."""
    return os.path.join(DRBD_RUN_DIR, "d%d.img" % port)


# Files that may be uploaded to a node through the upload_file RPC.
def GetUploadableFiles() -> frozenset[str]:
    """Whitelist of files the master may push to other nodes."""
    return frozenset([
        CLUSTER_CONF_FILE,
        NODED_CERT_FILE,
        RAPI_CERT_FILE,
        RAPI_USERS_FILE,
        CLUSTER_DOMAIN_SECRET_FILE,
        CONFD_HMAC_KEY,
        FILE_STORAGE_PATHS_FILE,
        BLOCKDEV_PATHS_FILE,
        WATCHER_PAUSEFILE,
    ])
