"""Simple configuration store: the ssconf_* files on every node.

Nodes that are not master candidates have no config.data; the master
pushes them a few values (cluster name, master node, node lists, ...) as
one small file per key, ``<DATA_DIR>/ssconf_<key>``. Multi-valued keys
hold one item per line. The names and formats are Ganeti's, so existing
scripts reading these files keep working.
"""

import logging
import os
import stat
import sys
from typing import Any

from ganeti import constants, errors, netutils, pathutils, utils
from ganeti.utils import uidpool

SS_CLUSTER_NAME = "cluster_name"
SS_CLUSTER_TAGS = "cluster_tags"
SS_FILE_STORAGE_DIR = "file_storage_dir"
SS_SHARED_FILE_STORAGE_DIR = "shared_file_storage_dir"
SS_GLUSTER_STORAGE_DIR = "gluster_storage_dir"
SS_MASTER_CANDIDATES = "master_candidates"
SS_MASTER_CANDIDATES_IPS = "master_candidates_ips"
SS_MASTER_CANDIDATES_CERTS = "master_candidates_certs"
SS_MASTER_IP = "master_ip"
SS_MASTER_NETDEV = "master_netdev"
SS_MASTER_NETMASK = "master_netmask"
SS_MASTER_NODE = "master_node"
SS_NODE_LIST = "node_list"
SS_NODE_PRIMARY_IPS = "node_primary_ips"
SS_NODE_SECONDARY_IPS = "node_secondary_ips"
SS_NODE_VM_CAPABLE = "node_vm_capable"
SS_OFFLINE_NODES = "offline_nodes"
SS_ONLINE_NODES = "online_nodes"
SS_PRIMARY_IP_FAMILY = "primary_ip_family"
SS_INSTANCE_LIST = "instance_list"
SS_RELEASE_VERSION = "release_version"
SS_HYPERVISOR_LIST = "hypervisor_list"
SS_MAINTAIN_NODE_HEALTH = "maintain_node_health"
SS_UID_POOL = "uid_pool"
SS_NODEGROUPS = "nodegroups"
SS_NETWORKS = "networks"
SS_ENABLED_USER_SHUTDOWN = "enabled_user_shutdown"
SS_SSH_PORTS = "ssh_ports"
SS_HVPARAMS_PREF = "hvparams_"
# For ganeti-mond on every node: one "<name> <active> <interval us>" line
# per data collector, and the self-diagnose command
SS_DATA_COLLECTORS = "data_collectors"
SS_DIAGNOSE_DATA_COLLECTOR_FILENAME = "diagnose_data_collector_filename"

VALID_KEYS = frozenset([
    SS_CLUSTER_NAME, SS_CLUSTER_TAGS, SS_FILE_STORAGE_DIR,
    SS_SHARED_FILE_STORAGE_DIR, SS_GLUSTER_STORAGE_DIR, SS_MASTER_CANDIDATES,
    SS_MASTER_CANDIDATES_IPS, SS_MASTER_CANDIDATES_CERTS, SS_MASTER_IP,
    SS_MASTER_NETDEV, SS_MASTER_NETMASK, SS_MASTER_NODE, SS_NODE_LIST,
    SS_NODE_PRIMARY_IPS, SS_NODE_SECONDARY_IPS, SS_NODE_VM_CAPABLE,
    SS_OFFLINE_NODES, SS_ONLINE_NODES, SS_PRIMARY_IP_FAMILY, SS_INSTANCE_LIST,
    SS_RELEASE_VERSION, SS_HYPERVISOR_LIST, SS_MAINTAIN_NODE_HEALTH,
    SS_UID_POOL, SS_NODEGROUPS, SS_NETWORKS, SS_ENABLED_USER_SHUTDOWN,
    SS_SSH_PORTS, SS_DATA_COLLECTORS, SS_DIAGNOSE_DATA_COLLECTOR_FILENAME,
]) | frozenset(SS_HVPARAMS_PREF + hv for hv in constants.HYPER_TYPES)

SS_FILE_PERMS = 0o444
# Values are small; a bigger file is corrupt, not a value to use
_MAX_SIZE = 128 * 1024
_FILE_PREFIX = "ssconf_"


def FormatUidPool(uid_pool: list, separator: str = "\n") -> str:
    """The ssconf form of the uid pool: one range per line."""
    return uidpool.FormatUidPool(uid_pool, separator)


def ParseUidPool(text: str) -> list[tuple[int, int]]:
    """Inverse of FormatUidPool (one range per line)."""
    try:
        return uidpool.ParseUidPool(text, "\n")
    except errors.OpPrereqError as err:
        raise errors.ConfigurationError("Invalid uid pool: %s" %
                                        err.args[0]) from None


def _ParseBool(key: str, value: str) -> bool:
    if value == "True":
        return True
    if value == "False":
        return False
    raise errors.ConfigurationError("Invalid boolean %r in ssconf %s" %
                                    (value, key))


class SimpleStore:
    """Reads and writes the ssconf files below ``root``."""

    def __init__(self, root: str = pathutils.DATA_DIR):
        self._root = root

    def KeyToFilename(self, key: str) -> str:
        """Path of the file for ``key``; unknown keys are a bug."""
        if key not in VALID_KEYS:
            raise errors.ProgrammerError("Invalid ssconf key %r" % key)
        return os.path.join(self._root, _FILE_PREFIX + key)

    def _ReadFile(self, key: str, default: str | None = None) -> str:
        filename = self.KeyToFilename(key)
        try:
            with open(filename, "rb") as fobj:
                data = fobj.read(_MAX_SIZE + 1)
        except OSError as err:
            if default is not None:
                return default
            raise errors.ConfigurationError("Can't read ssconf file %s: %s" %
                                            (filename, err))
        if len(data) > _MAX_SIZE:
            raise errors.ConfigurationError(
                "ssconf file %s is larger than %d bytes" %
                (filename, _MAX_SIZE))
        return data.decode("utf-8").rstrip("\n")

    def _ReadLines(self, key: str) -> list[str]:
        return [line for line in self._ReadFile(key).splitlines() if line]

    def ReadAll(self) -> dict[str, str]:
        """Every ssconf value present on this node."""
        result = {}
        for key in sorted(VALID_KEYS):
            if os.path.exists(self.KeyToFilename(key)):
                result[key] = self._ReadFile(key)
        return result

    def WriteFiles(self, values: dict[str, str]) -> None:
        """Replace the files of the given keys, each atomically.

        All keys are checked before anything is written, so a bad key
        leaves every file as it was. Files already holding their value
        are left alone: most configuration changes touch one or two keys,
        and each durable write costs an fsync.
        """
        for key, value in values.items():
            self.KeyToFilename(key)
            if not isinstance(value, str):
                raise errors.ProgrammerError("ssconf value of %s must be a"
                                             " string, not %r" % (key, value))
        changed = sorted(key for key, value in values.items()
                         if not self._Holds(key, value))
        for key in changed:
            utils.WriteFile(self.KeyToFilename(key), data=values[key],
                            mode=SS_FILE_PERMS, dir_fsync=False)
        if changed:
            utils.FsyncDirectory(self._root)
            logging.debug("Wrote ssconf keys %s", ", ".join(changed))

    def _Holds(self, key: str, value: str) -> bool:
        """Whether the file of ``key`` holds exactly ``value``, with the
        right permissions."""
        data = value.encode("utf-8")
        try:
            with open(self.KeyToFilename(key), "rb") as fobj:
                return (stat.S_IMODE(os.fstat(fobj.fileno()).st_mode) ==
                        SS_FILE_PERMS and fobj.read(len(data) + 1) == data)
        except OSError:
            return False

    def GetClusterName(self) -> str:
        return self._ReadFile(SS_CLUSTER_NAME)

    def GetClusterTags(self) -> list[str]:
        return self._ReadLines(SS_CLUSTER_TAGS)

    def GetFileStorageDir(self) -> str:
        return self._ReadFile(SS_FILE_STORAGE_DIR)

    def GetSharedFileStorageDir(self) -> str:
        return self._ReadFile(SS_SHARED_FILE_STORAGE_DIR)

    def GetMasterCandidates(self) -> list[str]:
        """Names of the master candidates (the master included)."""
        return self._ReadLines(SS_MASTER_CANDIDATES)

    def GetMasterCandidatesIPList(self) -> list[str]:
        return self._ReadLines(SS_MASTER_CANDIDATES_IPS)

    def GetMasterIP(self) -> str:
        return self._ReadFile(SS_MASTER_IP)

    def GetMasterNetdev(self) -> str:
        return self._ReadFile(SS_MASTER_NETDEV)

    def GetMasterNetmask(self) -> int:
        value = self._ReadFile(SS_MASTER_NETMASK)
        try:
            return int(value)
        except ValueError:
            raise errors.ConfigurationError("Invalid master netmask %r" %
                                            value)

    def GetMasterNode(self) -> str:
        """Name of the master node."""
        return self._ReadFile(SS_MASTER_NODE)

    def GetNodeList(self) -> list[str]:
        return self._ReadLines(SS_NODE_LIST)

    def GetOnlineNodeList(self) -> list[str]:
        return self._ReadLines(SS_ONLINE_NODES)

    def GetOfflineNodeList(self) -> list[str]:
        return self._ReadLines(SS_OFFLINE_NODES)

    def GetNodePrimaryIPList(self) -> list[str]:
        """Lines ``name primary_ip``."""
        return self._ReadLines(SS_NODE_PRIMARY_IPS)

    def GetNodeSecondaryIPList(self) -> list[str]:
        """Lines ``name secondary_ip``."""
        return self._ReadLines(SS_NODE_SECONDARY_IPS)

    def GetNodesVmCapable(self) -> dict[str, bool]:
        result = {}
        for line in self._ReadLines(SS_NODE_VM_CAPABLE):
            name, _, value = line.partition("=")
            result[name] = _ParseBool(SS_NODE_VM_CAPABLE, value)
        return result

    def GetNodegroupList(self) -> list[str]:
        """Lines ``uuid name``."""
        return self._ReadLines(SS_NODEGROUPS)

    def GetNetworkList(self) -> list[str]:
        """Lines ``uuid name``."""
        return self._ReadLines(SS_NETWORKS)

    def GetInstanceList(self) -> list[str]:
        return self._ReadLines(SS_INSTANCE_LIST)

    def GetHypervisorList(self) -> list[str]:
        return self._ReadLines(SS_HYPERVISOR_LIST)

    def GetReleaseVersion(self) -> str:
        return self._ReadFile(SS_RELEASE_VERSION)

    def GetMaintainNodeHealth(self) -> bool:
        return _ParseBool(SS_MAINTAIN_NODE_HEALTH,
                          self._ReadFile(SS_MAINTAIN_NODE_HEALTH))

    def GetEnabledUserShutdown(self) -> bool:
        return _ParseBool(SS_ENABLED_USER_SHUTDOWN,
                          self._ReadFile(SS_ENABLED_USER_SHUTDOWN))

    def GetDataCollectors(self) -> dict[str, dict[str, Any]]:
        """The data collectors' settings ({} before the master wrote any).
        """
        result = {}
        for line in self._ReadFile(SS_DATA_COLLECTORS, "").splitlines():
            fields = line.split()
            try:
                name, active, interval = fields
                result[name] = {
                    constants.DATA_COLLECTOR_STATE_ACTIVE:
                        _ParseBool(SS_DATA_COLLECTORS, active),
                    constants.DATA_COLLECTOR_PARAMETER_INTERVAL:
                        int(interval)}
            except ValueError:
                raise errors.ConfigurationError(
                    "Invalid line %r in ssconf %s" %
                    (line, SS_DATA_COLLECTORS)) from None
        return result

    def GetDiagnoseDataCollectorFilename(self) -> str:
        return self._ReadFile(SS_DIAGNOSE_DATA_COLLECTOR_FILENAME, "")

    def GetUidPool(self) -> list[tuple[int, int]]:
        return ParseUidPool(self._ReadFile(SS_UID_POOL))

    def GetPrimaryIPFamily(self) -> int:
        value = self._ReadFile(SS_PRIMARY_IP_FAMILY)
        try:
            return int(value)
        except ValueError:
            raise errors.ConfigurationError("Invalid primary IP family %r" %
                                            value)


def GetMasterAndMyself(ss: SimpleStore | None = None) -> tuple[str, str]:
    """The master's name according to ssconf, and this node's name."""
    if ss is None:
        ss = SimpleStore()
    return ss.GetMasterNode(), netutils.GetMyName()


def CheckMaster(debug: bool = False, ss: SimpleStore | None = None) -> None:
    """Exit unless this node is the master according to ssconf.

    Daemons that only run on the master call this at startup; the exit
    code tells init scripts whether the node is set up at all.
    """
    try:
        master, myself = GetMasterAndMyself(ss)
    except errors.ConfigurationError as err:
        print("Cluster configuration incomplete: '%s'" % err)
        sys.exit(constants.EXIT_NODESETUP_ERROR)
    if master != myself:
        if debug:
            sys.stderr.write("Not master (master is %s, this node is %s),"
                             " exiting.\n" % (master, myself))
        sys.exit(constants.EXIT_NOTMASTER)
