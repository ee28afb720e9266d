"""Constants shared by every daemon, command and library module.

Values follow Ganeti 3.1 where an external interface depends on them (wire
formats, job statuses, exit codes, ports), so that existing tools and
clients keep working.
"""

# Versions -----------------------------------------------------------------
VERSION_MAJOR = 3
VERSION_MINOR = 1
VERSION_REVISION = 0
RELEASE_VERSION = "%d.%d.%d" % (VERSION_MAJOR, VERSION_MINOR,
                                VERSION_REVISION)
VCS_VERSION = "ganeti-py-" + RELEASE_VERSION


def BuildVersion(major: int, minor: int, revision: int) -> int:
    """Encode a version triple the way Ganeti's config and protocol do."""
    return 1000000 * major + 10000 * minor + revision


CONFIG_VERSION = BuildVersion(VERSION_MAJOR, VERSION_MINOR, VERSION_REVISION)
PROTOCOL_VERSION = CONFIG_VERSION
LUXI_VERSION = CONFIG_VERSION
OS_API_VERSION = 20
# OS API versions accepted in an OS's ganeti_api_version (20 is current)
OS_API_VERSIONS = frozenset([10, 15, 20])
EXPORT_VERSION = 0
RAPI_VERSION = 2
JOB_QUEUE_VERSION = 1

# Daemons and ports ----------------------------------------------------------
MASTERD = "ganeti-masterd"
NODED = "ganeti-noded"
RAPI = "ganeti-rapi"
MAINTD = "ganeti-maintd"
MOND = "ganeti-mond"
DAEMONS = frozenset([MASTERD, NODED, RAPI, MAINTD, MOND])
# What the master runs, started by init and master-failover (stopped on
# the old master), in start order: rapi and maintd talk to masterd
MASTER_DAEMONS = (MASTERD, RAPI, MAINTD)
# What refuses to run elsewhere
MASTER_ONLY_DAEMONS = frozenset(MASTER_DAEMONS)

DEFAULT_NODED_PORT = 1811
DEFAULT_MOND_PORT = 1815
DEFAULT_MAINTD_PORT = 1816
DEFAULT_RAPI_PORT = 5080
DAEMON_PORTS = {
    NODED: ("tcp", DEFAULT_NODED_PORT),
    RAPI: ("tcp", DEFAULT_RAPI_PORT),
    MAINTD: ("tcp", DEFAULT_MAINTD_PORT),
    MOND: ("tcp", DEFAULT_MOND_PORT),
}

DAEMONS_LOGBASE = {
    MASTERD: "master-daemon",
    NODED: "node-daemon",
    RAPI: "rapi-daemon",
    MAINTD: "maintenance-daemon",
    MOND: "monitoring-daemon",
}

# File modes -----------------------------------------------------------------
SECURE_DIR_MODE = 0o700
SECURE_FILE_MODE = 0o600
JOB_QUEUE_FILES_PERMS = 0o640
JOB_QUEUE_DIRS_PERMS = 0o750
RUN_DIRS_MODE = 0o775
SOCKET_MODE = 0o660
# config.data holds private OS parameters in clear: readable by root only
CONFIG_FILE_MODE = 0o600
# Shown instead of the value of a private or secret opcode parameter
REDACTED = "<redacted>"

# Job queue ------------------------------------------------------------------
JOB_STATUS_QUEUED = "queued"
JOB_STATUS_WAITING = "waiting"
JOB_STATUS_CANCELING = "canceling"
JOB_STATUS_RUNNING = "running"
JOB_STATUS_CANCELED = "canceled"
JOB_STATUS_SUCCESS = "success"
JOB_STATUS_ERROR = "error"
JOBS_PENDING = frozenset([JOB_STATUS_QUEUED, JOB_STATUS_WAITING,
                          JOB_STATUS_CANCELING])
JOBS_FINALIZED = frozenset([JOB_STATUS_CANCELED, JOB_STATUS_SUCCESS,
                            JOB_STATUS_ERROR])
JOB_STATUS_ALL = frozenset([JOB_STATUS_RUNNING]) | JOBS_PENDING | \
    JOBS_FINALIZED

OP_STATUS_QUEUED = "queued"
OP_STATUS_WAITING = "waiting"
OP_STATUS_CANCELING = "canceling"
OP_STATUS_RUNNING = "running"
OP_STATUS_CANCELED = "canceled"
OP_STATUS_SUCCESS = "success"
OP_STATUS_ERROR = "error"
OPS_FINALIZED = frozenset([OP_STATUS_CANCELED, OP_STATUS_SUCCESS,
                           OP_STATUS_ERROR])

JOB_ID_TEMPLATE = r"\d+"
JOB_FILE_PREFIX = "job-"
JSTORE_JOBS_PER_ARCHIVE_DIRECTORY = 10000
JOB_QUEUE_SIZE_HARD_LIMIT = 5000
JOB_NOTCHANGED = "nochange"
JOBQUEUE_THREADS = 25
# The job was running when the master daemon stopped (startup recovery)
JOB_LOST_MESSAGE = "job was running when the master daemon stopped"

# Log entry types of the per-opcode log
ELOG_MESSAGE = "message"
ELOG_MESSAGE_LIST = "message-list"
ELOG_REMOTE_IMPORT = "remote-import"
ELOG_JQUEUE_TEST = "jqueue-test"
# OpTestJqueue: what a jqueue-test log entry announces, and the prefix of
# its test messages
JQT_EXPANDNAMES = "expandnames"
JQT_EXEC = "exec"
JQT_LOGMSG = "logmsg"
JQT_STARTMSG = "startmsg"
JQT_MSGPREFIX = "TESTMSG="
ELOG_DELAY_TEST = "delay-test"

# Opcode priorities (lower number: higher priority)
OP_PRIO_LOWEST = 19
OP_PRIO_HIGHEST = -20
OP_PRIO_LOW = 10
OP_PRIO_NORMAL = 0
OP_PRIO_HIGH = -10
OP_PRIO_DEFAULT = OP_PRIO_NORMAL
OP_PRIO_SUBMIT_VALID = frozenset([OP_PRIO_LOW, OP_PRIO_NORMAL, OP_PRIO_HIGH])
OP_PRIO_NAMES = {"low": OP_PRIO_LOW, "normal": OP_PRIO_NORMAL,
                 "high": OP_PRIO_HIGH}

# Reason trail sources
OPCODE_REASON_SRC_CLIENT = "gnt:client"
OPCODE_REASON_SRC_USER = "gnt:user"
OPCODE_REASON_SRC_OPCODE = "gnt:opcode"
OPCODE_REASON_SRC_RLIB2 = "gnt:library:rlib2"
OPCODE_REASON_SRC_WATCHER = "gnt:watcher"
OPCODE_REASON_SRC_NODED = "gnt:daemon:noded"
OPCODE_REASON_SRC_PICKUP = "gnt:daemon:masterd:pickup"
# The jobs gnt-cluster rebalance (hbal -X) submits
OPCODE_REASON_SRC_REBALANCE = "gnt:daemon:rebalance"
# The jobs ganeti-maintd submits (the incident id is the text)
OPCODE_REASON_SRC_MAINTD = "gnt:daemon:maintd"

# LUXI -----------------------------------------------------------------------
LUXI_EOM = b"\x03"
LUXI_DEF_CTMO = 30
LUXI_DEF_RWTO = 180
LUXI_WFJC_TIMEOUT = (LUXI_DEF_RWTO - 1) // 2
# Largest request a LUXI server accepts; bigger ones get an encoded error
LUXI_MAX_MESSAGE_SIZE = 64 * 1024 * 1024

# Query ------------------------------------------------------------------
QR_CLUSTER = "cluster"
QR_INSTANCE = "instance"
QR_NODE = "node"
QR_LOCK = "lock"
QR_GROUP = "group"
QR_OS = "os"
QR_JOB = "job"
QR_EXPORT = "export"
QR_NETWORK = "network"
QR_FILTER = "filter"
# Resources RAPI's /2/query serves (those of LUXI's Query)
QR_VIA_RAPI = frozenset([QR_INSTANCE, QR_NODE, QR_GROUP, QR_EXPORT,
                         QR_NETWORK, QR_LOCK, QR_JOB, QR_FILTER])

QFT_UNKNOWN = "unknown"
QFT_TEXT = "text"
QFT_BOOL = "bool"
QFT_NUMBER = "number"
QFT_NUMBER_FLOAT = "float"
QFT_UNIT = "unit"
QFT_TIMESTAMP = "timestamp"
QFT_OTHER = "other"

RS_NORMAL = 0
RS_UNKNOWN = 1
RS_NODATA = 2
RS_UNAVAIL = 3
RS_OFFLINE = 4

# Tags -----------------------------------------------------------------------
TAG_CLUSTER = "cluster"
TAG_NODEGROUP = "nodegroup"
TAG_NODE = "node"
TAG_INSTANCE = "instance"
TAG_NETWORK = "network"
VALID_TAG_TYPES = frozenset([TAG_CLUSTER, TAG_NODEGROUP, TAG_NODE,
                             TAG_INSTANCE, TAG_NETWORK])
MAX_TAG_LEN = 128
MAX_TAGS_PER_OBJ = 4096

# Hypervisors and storage -----------------------------------------------------
HT_FAKE = "fake"
HT_KVM = "kvm"
HYPER_TYPES = frozenset([HT_FAKE, HT_KVM])
# Hypervisors whose instances get a network port (KVM: its VNC console)
HTS_REQ_PORT = frozenset([HT_KVM])

# Migration modes (hypervisor parameter migration_mode)
HT_MIGRATION_LIVE = "live"
HT_MIGRATION_NONLIVE = "non-live"
HT_MIGRATION_MODES = frozenset([HT_MIGRATION_LIVE, HT_MIGRATION_NONLIVE])

# Node evacuation modes (gnt-node evacuate -p/-s, OpNodeEvacuate.mode)
NODE_EVAC_PRI = "primary-only"
NODE_EVAC_SEC = "secondary-only"
NODE_EVAC_ALL = "all"
NODE_EVAC_MODES = frozenset([NODE_EVAC_PRI, NODE_EVAC_SEC, NODE_EVAC_ALL])

# Instance allocators (ganeti.masterd.iallocator): protocol version of the
# input message, request types, gnt-debug directions
IALLOCATOR_VERSION = 2
IALLOCATOR_MODE_ALLOC = "allocate"
IALLOCATOR_MODE_ALLOCATE_SECONDARY = "allocate-secondary"
IALLOCATOR_MODE_CHG_GROUP = "change-group"
IALLOCATOR_MODE_MULTI_ALLOC = "multi-allocate"
IALLOCATOR_MODE_NODE_EVAC = "node-evacuate"
IALLOCATOR_MODE_RELOC = "relocate"
VALID_IALLOCATOR_MODES = frozenset([
    IALLOCATOR_MODE_ALLOC, IALLOCATOR_MODE_ALLOCATE_SECONDARY,
    IALLOCATOR_MODE_CHG_GROUP, IALLOCATOR_MODE_MULTI_ALLOC,
    IALLOCATOR_MODE_NODE_EVAC, IALLOCATOR_MODE_RELOC])
IALLOCATOR_DIR_IN = "in"
IALLOCATOR_DIR_OUT = "out"
VALID_IALLOCATOR_DIRECTIONS = frozenset([IALLOCATOR_DIR_IN,
                                         IALLOCATOR_DIR_OUT])
# The built-in allocator (ganeti.htools.allocator), the default
# default_iallocator; masterd runs it in-process
IALLOCATOR_BUILTIN = "halloc"
# Seconds an allocator program may run before noded kills it
IALLOCATOR_TIMEOUT = 300

# Migration status reported by the source node's hypervisor
HV_MIGRATION_ACTIVE = "active"
HV_MIGRATION_CANCELLED = "cancelled"
HV_MIGRATION_COMPLETED = "completed"
HV_MIGRATION_FAILED = "failed"
HV_MIGRATION_POSTCOPY_ACTIVE = "postcopy-active"
HV_MIGRATION_VALID_STATUSES = frozenset([
    HV_MIGRATION_ACTIVE, HV_MIGRATION_CANCELLED, HV_MIGRATION_COMPLETED,
    HV_MIGRATION_FAILED, HV_MIGRATION_POSTCOPY_ACTIVE])
HV_MIGRATION_FAILED_STATUSES = frozenset([HV_MIGRATION_CANCELLED,
                                          HV_MIGRATION_FAILED])

# Runtime state of an instance as its hypervisor reports it
HV_INSTANCE_RUNNING = 0
HV_INSTANCE_SHUTDOWN = 1

# Reboot types
INSTANCE_REBOOT_SOFT = "soft"
INSTANCE_REBOOT_HARD = "hard"
INSTANCE_REBOOT_FULL = "full"
REBOOT_TYPES = frozenset([INSTANCE_REBOOT_SOFT, INSTANCE_REBOOT_HARD,
                          INSTANCE_REBOOT_FULL])
# Seconds an instance gets to shut down cleanly before it is forced off
DEFAULT_SHUTDOWN_TIMEOUT = 120

# Console kinds (InstanceConsole.kind)
CONS_MESSAGE = "msg"
CONS_SSH = "ssh"
CONS_VNC = "vnc"
CONS_SPICE = "spice"

DT_DISKLESS = "diskless"
DT_FILE = "file"
DT_SHARED_FILE = "sharedfile"
DT_PLAIN = "plain"
DT_DRBD8 = "drbd"
DT_BLOCK = "blockdev"
DT_EXT = "ext"
DISK_TEMPLATES = frozenset([DT_DISKLESS, DT_FILE, DT_SHARED_FILE, DT_PLAIN,
                            DT_DRBD8, DT_BLOCK, DT_EXT])
DEFAULT_ENABLED_DISK_TEMPLATES = [DT_FILE, DT_DISKLESS]

# Nodes -----------------------------------------------------------------------
# Node group allocation policies
ALLOC_POLICY_PREFERRED = "preferred"
ALLOC_POLICY_LAST_RESORT = "last_resort"
ALLOC_POLICY_UNALLOCABLE = "unallocable"
VALID_ALLOC_POLICIES = (ALLOC_POLICY_PREFERRED, ALLOC_POLICY_LAST_RESORT,
                        ALLOC_POLICY_UNALLOCABLE)

NR_MASTER = "M"
NR_MCANDIDATE = "C"
NR_REGULAR = "R"
NR_DRAINED = "D"
NR_OFFLINE = "O"

# Out-of-band management: the node's oob_program is run on the master as
# "<program> <command> <node name>"; power-status and health answer JSON
OOB_POWER_ON = "power-on"
OOB_POWER_OFF = "power-off"
OOB_POWER_CYCLE = "power-cycle"
OOB_POWER_STATUS = "power-status"
OOB_HEALTH = "health"
OOB_COMMANDS = frozenset([OOB_POWER_ON, OOB_POWER_OFF, OOB_POWER_CYCLE,
                          OOB_POWER_STATUS, OOB_HEALTH])
# Key of the power-status answer
OOB_POWER_STATUS_POWERED = "powered"
OOB_TIMEOUT = 60
OOB_POWER_DELAY = 2.0
OOB_STATUS_OK = "OK"
OOB_STATUS_WARNING = "WARNING"
OOB_STATUS_CRITICAL = "CRITICAL"
OOB_STATUS_UNKNOWN = "UNKNOWN"
OOB_STATUSES = frozenset([OOB_STATUS_OK, OOB_STATUS_WARNING,
                          OOB_STATUS_CRITICAL, OOB_STATUS_UNKNOWN])

# Key of the cluster-wide group in beparams/nicparams ("default")
PP_DEFAULT = "default"

# Cluster defaults ------------------------------------------------------------
MASTER_POOL_SIZE_DEFAULT = 10
DEFAULT_MAX_RUNNING_JOBS = 20
DEFAULT_MAX_TRACKED_JOBS = 25
DEFAULT_MAC_PREFIX = "aa:00:00"
DEFAULT_BRIDGE = "xen-br0"
DEFAULT_MASTER_NETDEV = "lo"
DEFAULT_MASTER_NETMASK = 32
DEFAULT_GROUP_NAME = "default"
DEFAULT_DRBD_HELPER = "/bin/true"
IP4_VERSION = 4
IP6_VERSION = 6
IP4_FAMILY = 2
IP6_FAMILY = 10
FIRST_DRBD_PORT = 11000
LAST_DRBD_PORT = 14999
# Dynamic disk parameters the master adds for the node it calls (drbd:
# the addresses of both ends of the pair)
DDP_LOCAL_IP = "local-ip"
DDP_REMOTE_IP = "remote-ip"
DDP_LOCAL_MINOR = "local-minor"
DDP_REMOTE_MINOR = "remote-minor"
# Modes of replace-disks (drbd): the same secondary's or the primary's
# copy made again, both as needed, or the mirror moved to a new secondary
REPLACE_DISK_PRI = "replace_on_primary"
REPLACE_DISK_SEC = "replace_on_secondary"
REPLACE_DISK_CHG = "replace_new_secondary"
REPLACE_DISK_AUTO = "replace_auto"
REPLACE_MODES = frozenset([REPLACE_DISK_PRI, REPLACE_DISK_SEC,
                           REPLACE_DISK_CHG, REPLACE_DISK_AUTO])
# Local disk status, the last element of a mirror status tuple
# (Ganeti 3.0's values; LDS_SYNC is not reported by these templates)
LDS_OKAY = 1
LDS_SYNC = 2
LDS_UNKNOWN = 3
LDS_FAULTY = 4
LDS_NAMES = {LDS_OKAY: "ok", LDS_SYNC: "syncing", LDS_UNKNOWN: "unknown",
             LDS_FAULTY: "faulty"}
CLUSTER_NAME_RE = r"^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$"

# Validity of the cluster certificate created by init, in days
X509_CERT_DEFAULT_VALIDITY = 365 * 5
X509_CERT_SIGN_DIGEST = "SHA256"

# Monitoring daemon (ganeti-mond) ---------------------------------------------
# Data collectors: Ganeti's names where Ganeti has the collector; the
# instance status one per hypervisor as Ganeti's inst-status-xen
DATA_COLLECTOR_CPU_LOAD = "cpu-avg-load"
DATA_COLLECTOR_DISK_STATS = "diskstats"
DATA_COLLECTOR_INST_STATUS_KVM = "inst-status-kvm"
DATA_COLLECTOR_INST_STATUS_FAKE = "inst-status-fake"
DATA_COLLECTOR_NODE_LOAD = "node-load"
DATA_COLLECTOR_DIAGNOSE = "diagnose"
DATA_COLLECTOR_DRBD = "drbd"
DATA_COLLECTOR_NAMES = frozenset([
    DATA_COLLECTOR_CPU_LOAD, DATA_COLLECTOR_DISK_STATS,
    DATA_COLLECTOR_INST_STATUS_KVM, DATA_COLLECTOR_INST_STATUS_FAKE,
    DATA_COLLECTOR_NODE_LOAD, DATA_COLLECTOR_DIAGNOSE, DATA_COLLECTOR_DRBD])
# Keys of a collector's entry in the cluster's data_collectors
DATA_COLLECTOR_STATE_ACTIVE = "active"
DATA_COLLECTOR_PARAMETER_INTERVAL = "interval"
# Default collection interval, seconds (stored in microseconds)
MOND_TIME_INTERVAL = 5
# What a node's self-diagnose command may ask for (design-maintd)
# ganeti-maintd's settings in the configuration's maintenance section:
# seconds between the starts of two rounds, and the score gain a balancing
# round needs (Ganeti's maintdDefaultRoundDelay/BalanceThreshold)
MAINTD_DEFAULT_ROUND_DELAY = 300
MAINTD_DEFAULT_BALANCE_THRESHOLD = 0.1
DIAGNOSE_OK = "Ok"
DIAGNOSE_LIVE_REPAIR = "live-repair"
DIAGNOSE_EVACUATE = "evacuate"
DIAGNOSE_EVACUATE_FAILOVER = "evacuate-failover"
DIAGNOSE_STATUSES = frozenset([DIAGNOSE_OK, DIAGNOSE_LIVE_REPAIR,
                               DIAGNOSE_EVACUATE, DIAGNOSE_EVACUATE_FAILOVER])
# The longest a live-repair command may run on its node, seconds (the
# repair_command RPC waits a little longer)
REPAIR_COMMAND_TIMEOUT = 30 * 60

# Only one repair command runs on a node at a time: a request waits this
# long for the one running; a refused or failed one is answered only after
# REPAIR_COMMAND_FAIL_DELAY seconds, the lock still held, so that failures
# can't be provoked in quick succession (the restricted commands' rules)
REPAIR_COMMAND_LOCK_TIMEOUT = 60
REPAIR_COMMAND_FAIL_DELAY = 5

# Auto-repair (harep, and maintd doing harep's duties): the instance,
# group or cluster tags allowing repairs up to a type, suspending them
# (forever, or until a Unix time), and the state tags of a repair
AUTO_REPAIR_TAG_PREFIX = "ganeti:watcher:autorepair:"
AUTO_REPAIR_TAG_ENABLED = AUTO_REPAIR_TAG_PREFIX
AUTO_REPAIR_TAG_PENDING = AUTO_REPAIR_TAG_PREFIX + "pending:"
AUTO_REPAIR_TAG_RESULT = AUTO_REPAIR_TAG_PREFIX + "result:"
AUTO_REPAIR_TAG_SUSPENDED = AUTO_REPAIR_TAG_PREFIX + "suspend:"
AUTO_REPAIR_FIX_STORAGE = "fix-storage"
AUTO_REPAIR_MIGRATE = "migrate"
AUTO_REPAIR_FAILOVER = "failover"
AUTO_REPAIR_REINSTALL = "reinstall"
# From the least to the most destructive; each allows the ones before it
AUTO_REPAIR_TYPES = (AUTO_REPAIR_FIX_STORAGE, AUTO_REPAIR_MIGRATE,
                     AUTO_REPAIR_FAILOVER, AUTO_REPAIR_REINSTALL)
AUTO_REPAIR_SUCCESS = "success"
AUTO_REPAIR_FAILURE = "failure"
AUTO_REPAIR_ENOPERM = "enoperm"
AUTO_REPAIR_ALL_RESULTS = frozenset([AUTO_REPAIR_SUCCESS, AUTO_REPAIR_FAILURE,
                                     AUTO_REPAIR_ENOPERM])

# RPC -------------------------------------------------------------------------
RPC_CONNECT_TIMEOUT = 5
# Header of a request not safe to repeat: its id, run at most once by the
# node; ids are remembered at least this long (seconds)
RPC_CALL_ID_HEADER = "X-Ganeti-Call-Id"
RPC_CALL_ID_KEEP = 3600
RPC_TMO_URGENT = 60
RPC_TMO_FAST = 5 * 60
RPC_TMO_NORMAL = 15 * 60
RPC_TMO_SLOW = 3600
RPC_ENCODING_NONE = 0
RPC_ENCODING_ZLIB_BASE64 = 1

# Exit codes of the command line tools ----------------------------------------
EXIT_SUCCESS = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NOTCLUSTER = 5
EXIT_NOTMASTER = 11
EXIT_NODESETUP_ERROR = 12
EXIT_CONFIRMATION = 13
EXIT_UNKNOWN_FIELD = 14

# Lock timeouts of the processor: the first attempt waits this long, each
# retry longer, until acquisition blocks without timeout.
LOCK_ATTEMPTS_TIMEOUT = 1.0
LOCK_ATTEMPTS_MAXWAIT = 15.0
LOCK_ATTEMPTS_MINWAIT = 1.0

# Value used by the CLI's key=value parser to reset a parameter to default
VALUE_DEFAULT = "default"
VALUE_NONE = "none"
# A NIC's "ip=pool": the first free address of its network
NIC_IP_POOL = "pool"

# Cluster verification --------------------------------------------------------
# Severity of a finding; only errors make the verification fail
CV_ERROR = "ERROR"
CV_WARNING = "WARNING"

# Kind of the item a finding is about
CV_TCLUSTER = "cluster"
CV_TNODE = "node"
CV_TINSTANCE = "instance"

# Finding codes: (item kind, code, description), Ganeti's names and texts
CV_ECLUSTERCFG = (CV_TCLUSTER, "ECLUSTERCFG",
                  "Cluster configuration verification failure")
CV_ECLUSTERCERT = (CV_TCLUSTER, "ECLUSTERCERT",
                   "Cluster certificate files verification failure")
CV_ECLUSTERFILECHECK = (CV_TCLUSTER, "ECLUSTERFILECHECK",
                        "Cluster configuration verification failure")
CV_ECLUSTERDANGLINGNODES = (CV_TNODE, "ECLUSTERDANGLINGNODES",
                            "Some nodes belong to non-existing groups")
CV_ECLUSTERDANGLINGINST = (CV_TNODE, "ECLUSTERDANGLINGINST",
                           "Some instances have a non-existing primary node")
CV_ENODEFILECHECK = (CV_TNODE, "ENODEFILECHECK",
                     "Error retrieving the checksum of the node files")
CV_ENODERPC = (CV_TNODE, "ENODERPC",
               "Error during connection to the primary node of an instance")
CV_ENODEVERSION = (CV_TNODE, "ENODEVERSION",
                   "Protocol version mismatch or Ganeti version mismatch")
CV_ENODETIME = (CV_TNODE, "ENODETIME", "Node returned invalid time")
CV_ENODEHV = (CV_TNODE, "ENODEHV",
              "Hypervisor parameters verification failure")
CV_ENODEFILESTORAGEPATHS = (CV_TNODE, "ENODEFILESTORAGEPATHS",
                            "Detected bad file storage paths")
CV_ENODEFILESTORAGEPATHUNUSABLE = (CV_TNODE, "ENODEFILESTORAGEPATHUNUSABLE",
                                   "File storage path unusable")
CV_ENODESHAREDFILESTORAGEPATHUNUSABLE = (
    CV_TNODE, "ENODESHAREDFILESTORAGEPATHUNUSABLE",
    "Shared file storage path unusable")
CV_ENODESETUP = (CV_TNODE, "ENODESETUP", "Node setup error")
# Ganeti's code and title; here also disk files and instance directories
# in the file storage directories that no disk of the config accounts for
CV_ENODEORPHANLV = (CV_TNODE, "ENODEORPHANLV", "Unknown LVM logical volume")
CV_ENODEN1 = (CV_TNODE, "ENODEN1",
              "Not enough memory to accommodate instance failovers")
CV_EINSTANCEFAULTYDISK = (CV_TINSTANCE, "EINSTANCEFAULTYDISK",
                          "Impossible to retrieve status for a disk")
# Ganeti's code and title; here the block daemons of the drbd disks
CV_ENODEDRBD = (CV_TNODE, "ENODEDRBD", "Error parsing the DRBD status file")
CV_ALL_ECODES = frozenset([
    CV_EINSTANCEFAULTYDISK, CV_ENODEDRBD, CV_ENODEN1, CV_ECLUSTERCFG,
    CV_ECLUSTERCERT,
    CV_ECLUSTERFILECHECK,
    CV_ECLUSTERDANGLINGNODES, CV_ECLUSTERDANGLINGINST, CV_ENODEFILECHECK,
    CV_ENODERPC, CV_ENODEVERSION, CV_ENODETIME,
    CV_ENODEHV, CV_ENODEFILESTORAGEPATHS, CV_ENODEFILESTORAGEPATHUNUSABLE,
    CV_ENODESHAREDFILESTORAGEPATHUNUSABLE, CV_ENODESETUP, CV_ENODEORPHANLV,
])
CV_ALL_ECODES_STRINGS = frozenset(code for _, code, _ in CV_ALL_ECODES)
# Checks "gnt-cluster verify" may skip (OpClusterVerify's skip_checks)
VERIFY_NPLUSONE_MEM = "nplusone_mem"
VERIFY_OPTIONAL_CHECKS = frozenset([VERIFY_NPLUSONE_MEM])

# What the node_verify RPC may be asked for (keys of its checks argument)
NV_FILELIST = "filelist"
NV_TIME = "time"
NV_VERSION = "version"
# {hypervisor name: filled hvparams}: each hypervisor's Verify on the node
NV_HYPERVISOR = "hypervisor"
# The master's name: only the master reports forbidden allow-list entries
NV_ACCEPTED_STORAGE_PATHS = "allowed-file-storage-paths"
# The cluster's (shared) file storage directory, checked for usability
NV_FILE_STORAGE_PATH = "file-storage-path"
NV_SHARED_FILE_STORAGE_PATH = "shared-file-storage-path"
# File storage directories whose content the node lists (orphan check):
# answered as {directory: [[path relative to it, is a directory], ...]}
NV_FILE_STORAGE_FILES = "file-storage-files"
# Most entries listed per directory (a runaway tree can't flood the answer)
NV_FILE_STORAGE_FILES_MAX = 10000
# The name of a hypervisor: its view of the node (GetNodeInfo), whose
# free memory the N+1 check compares with what failovers would need
NV_HVINFO = "hvinfo"
# The drbd disk sides whose block daemons run on the node: answered as
# [[port, disk UUID or None, device exported (the primary role)], ...]
NV_DRBDLIST = "drbd-list"

# Largest clock difference between a node and the master, in seconds
NODE_MAX_CLOCK_SKEW = 150
# Days before expiry when the cluster certificates are reported
SSL_CERT_EXPIRATION_WARN = 30
SSL_CERT_EXPIRATION_ERROR = 7

# gnt-cluster command: longest run of the command on a node, in seconds
NODE_COMMAND_TIMEOUT = 15 * 60

# Hooks (doc/hooks.rst) ------------------------------------------------------
HOOKS_VERSION = 2
HOOKS_PHASE_PRE = "pre"
HOOKS_PHASE_POST = "post"
HOOKS_PHASES = frozenset([HOOKS_PHASE_PRE, HOOKS_PHASE_POST])
# The only PATH hook scripts get; the rest of their environment is GANETI_*
HOOKS_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"
# Status of one hook script, as the hooks_runner RPC reports it
HKR_SKIP = 0
HKR_FAIL = 1
HKR_SUCCESS = 2
# Object an operation is about (GANETI_OBJECT_TYPE)
HTYPE_CLUSTER = "CLUSTER"
HTYPE_NODE = "NODE"
HTYPE_GROUP = "GROUP"
HTYPE_INSTANCE = "INSTANCE"
HTYPE_NETWORK = "NETWORK"
# Longest run of one hook script, and of all scripts of one phase on a node
# (later scripts get what is left), in seconds
HOOKS_SCRIPT_TIMEOUT = 5 * 60
HOOKS_PHASE_TIMEOUT = 15 * 60

# OS definitions (OS API, ganeti-os-interface) --------------------------------
OS_SCRIPT_CREATE = "create"
OS_SCRIPT_CREATE_UNTRUSTED = "create_untrusted"
OS_SCRIPT_IMPORT = "import"
OS_SCRIPT_EXPORT = "export"
OS_SCRIPT_RENAME = "rename"
OS_SCRIPT_VERIFY = "verify"
# Scripts every OS definition has (create_untrusted is optional)
OS_SCRIPTS = frozenset([OS_SCRIPT_CREATE, OS_SCRIPT_IMPORT, OS_SCRIPT_EXPORT,
                        OS_SCRIPT_RENAME, OS_SCRIPT_VERIFY])
OS_API_FILE = "ganeti_api_version"
OS_VARIANTS_FILE = "variants.list"
OS_PARAMETERS_FILE = "parameters.list"
# What the verify script checks, passed as its first argument
OS_VALIDATE_PARAMETERS = "parameters"
OS_VALIDATE_CALLS = frozenset([OS_VALIDATE_PARAMETERS])
# An OS is named "name+variant"
OS_VARIANT_DELIM = "+"
# Longest run of an OS script, in seconds
OS_SCRIPT_TIMEOUT = 3600
# Lines of an OS script's log quoted in the error when it fails
OS_LOG_TAIL_LINES = 20

# Container modifications (hidden_os, blacklisted_os, disks, NICs)
DDM_ADD = "add"
DDM_MODIFY = "modify"
DDM_REMOVE = "remove"
DDMS_VALUES = frozenset([DDM_ADD, DDM_REMOVE])

# Disk templates by capability (Ganeti's DTS_* sets) -------------------------
DTS_INT_MIRROR = frozenset([DT_DRBD8])
DTS_EXT_MIRROR = frozenset([DT_DISKLESS, DT_BLOCK, DT_EXT, DT_SHARED_FILE])
DTS_MIRRORED = DTS_INT_MIRROR | DTS_EXT_MIRROR
DTS_GROWABLE = frozenset([DT_SHARED_FILE, DT_DRBD8, DT_PLAIN, DT_EXT,
                          DT_FILE])
DTS_MAY_ADOPT = frozenset([DT_BLOCK, DT_PLAIN])
DTS_MUST_ADOPT = frozenset([DT_BLOCK])
# Disk parameters of Ganeti's naming the LVM volume groups of a disk (its
# data and, for drbd, metadata): no template here keeps a disk in LVM, so
# they are accepted and unused, as Ganeti does for its file templates
# (scripts pass them for drbd disks)
IDISK_LVM_PARAMS = frozenset(["vg", "metavg"])
DTS_FILEBASED = frozenset([DT_FILE, DT_SHARED_FILE])
# Storage local to one node, which a move copies to another
DTS_COPYABLE = frozenset([DT_PLAIN, DT_FILE])
DTS_SNAPSHOT_CAPABLE = frozenset([DT_PLAIN, DT_DRBD8, DT_EXT])
DTS_NO_FREE_SPACE_CHECK = frozenset([DT_EXT, DT_SHARED_FILE, DT_FILE])

# File disk drivers (first element of a file disk's logical_id)
FD_LOOP = "loop"
FD_BLKTAP = "blktap"
FD_BLKTAP2 = "blktap2"
FD_DEFAULT = FD_LOOP
FILE_DRIVER = frozenset([FD_LOOP, FD_BLKTAP, FD_BLKTAP2])

# Driver of adopted block devices (first element of their logical_id)
BLOCKDEV_DRIVER_MANUAL = "manual"
# Where adoptable block devices may be, unless the cluster's allow-list
# (pathutils.BLOCKDEV_PATHS_FILE) says otherwise; shell patterns
ADOPTABLE_BLOCKDEV_PATTERNS = ("/dev/disk/*", "/dev/loop*")

# Storage unit types and their fields (gnt-node list-storage)
ST_FILE = "file"
ST_SHARED_FILE = "sharedfile"
ST_BLOCK = "blockdev"
ST_EXT = "ext"
SF_NODE = "node"
SF_TYPE = "type"
SF_NAME = "name"
SF_SIZE = "size"
SF_USED = "used"
SF_FREE = "free"
SF_ALLOCATABLE = "allocatable"
VALID_STORAGE_FIELDS = frozenset([SF_NAME, SF_SIZE, SF_USED, SF_FREE,
                                  SF_ALLOCATABLE])
# Storage types of templates without a storage unit listing here (Ganeti's
# names; there is no LVM on these nodes)
ST_DISKLESS = "diskless"
ST_LVM_VG = "lvm-vg"
ST_LVM_PV = "lvm-pv"
ST_GLUSTER = "gluster"
ST_RADOS = "rados"
STORAGE_TYPES = frozenset([ST_FILE, ST_SHARED_FILE, ST_BLOCK, ST_EXT,
                           ST_DISKLESS, ST_LVM_VG, ST_LVM_PV, ST_GLUSTER,
                           ST_RADOS])
# What gnt-node modify-storage may change and repair-storage may do, per
# storage type (Ganeti's: only LVM, which these nodes do not have)
MODIFIABLE_STORAGE_FIELDS = {ST_LVM_PV: frozenset([SF_ALLOCATABLE])}
SO_FIX_CONSISTENCY = "fix-consistency"
VALID_STORAGE_OPERATIONS = {ST_LVM_VG: frozenset([SO_FIX_CONSISTENCY])}
# Storage types whose units gnt-node list-storage reports
STS_REPORT_NODE_STORAGE = frozenset([ST_FILE, ST_SHARED_FILE])
MAP_DISK_TEMPLATE_STORAGE_TYPE = {
    DT_DISKLESS: ST_DISKLESS,
    DT_FILE: ST_FILE,
    DT_SHARED_FILE: ST_SHARED_FILE,
    DT_PLAIN: ST_LVM_VG,
    DT_DRBD8: ST_LVM_VG,
    DT_BLOCK: ST_BLOCK,
    DT_EXT: ST_EXT,
}

# ExtStorage interface: actions (script names) and the parameters file
ES_ACTION_CREATE = "create"
ES_ACTION_REMOVE = "remove"
ES_ACTION_GROW = "grow"
ES_ACTION_ATTACH = "attach"
ES_ACTION_DETACH = "detach"
ES_ACTION_SETINFO = "setinfo"
ES_ACTION_VERIFY = "verify"
ES_SCRIPTS = frozenset([ES_ACTION_CREATE, ES_ACTION_REMOVE, ES_ACTION_GROW,
                        ES_ACTION_ATTACH, ES_ACTION_DETACH, ES_ACTION_SETINFO,
                        ES_ACTION_VERIFY])
ES_PARAMETERS_FILE = "parameters.list"
# Longest run of one ExtStorage script, in seconds
ES_SCRIPT_TIMEOUT = 5 * 60

# Instances -------------------------------------------------------------------
# Creation modes of OpInstanceCreate ("remote-import" is not implemented)
INSTANCE_CREATE = "create"
INSTANCE_IMPORT = "import"
INSTANCE_REMOTE_IMPORT = "remote-import"
INSTANCE_CREATE_MODES = frozenset([INSTANCE_CREATE, INSTANCE_IMPORT,
                                   INSTANCE_REMOTE_IMPORT])
# Instance exports (gnt-backup); only local exports are implemented
EXPORT_MODE_LOCAL = "local"
EXPORT_MODE_REMOTE = "remote"
EXPORT_MODES = frozenset([EXPORT_MODE_LOCAL, EXPORT_MODE_REMOTE])
# The description of an export in its directory, and its sections
EXPORT_CONF_FILE = "config.ini"
INISECT_EXP = "export"
INISECT_INS = "instance"
INISECT_HYP = "hypervisor"
INISECT_BEP = "backend"
INISECT_OSP = "os"
INISECT_OSP_PRIVATE = "os_private"
# NIC MAC values asking the master to pick one
VALUE_AUTO = "auto"
VALUE_GENERATE = "generate"
# Instance status (query field "status"), as Ganeti reports it
INSTST_RUNNING = "running"
INSTST_ADMINDOWN = "ADMIN_down"
INSTST_ADMINOFFLINE = "ADMIN_offline"
INSTST_NODEOFFLINE = "ERROR_nodeoffline"
INSTST_NODEDOWN = "ERROR_nodedown"
INSTST_WRONGNODE = "ERROR_wrongnode"
INSTST_ERRORUP = "ERROR_up"
INSTST_ERRORDOWN = "ERROR_down"
INSTST_USERDOWN = "USER_down"
INSTST_ALL = frozenset([INSTST_RUNNING, INSTST_ADMINDOWN, INSTST_ADMINOFFLINE,
                        INSTST_NODEOFFLINE, INSTST_NODEDOWN, INSTST_WRONGNODE,
                        INSTST_ERRORUP, INSTST_ERRORDOWN, INSTST_USERDOWN])
