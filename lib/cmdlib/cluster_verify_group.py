"""The verification of one node group (OpClusterVerifyGroup): its nodes
(versions, time, hypervisors, storage paths, N+1 memory, drbd), its
instances' disks, and the files each node must hold with the master's
content.

Every node of the group is asked for its data in one RPC; the answers are
compared with each other and with the master's own state. The helpers
shared with the cluster-wide checks (findings, skip and ignore lists) are
in cluster_verify.
"""

import hashlib
import os
import time
from typing import Any, Callable, NamedTuple

from ganeti import (constants, errors, locking, objects, pathutils,
                    utils, vcluster)
from ganeti.cmdlib.base import LogicalUnit
from ganeti.cmdlib.cluster_verify import (CheckIgnoredCodes,
                                          CheckSkippedChecks, _VerifyErrors)
from ganeti.cmdlib.cluster_verify_drbd import NodeDrbdProblems
from ganeti.storage import drbd

# How often a group's data is gathered again when the configuration
# changed meanwhile (the nodes' copies may then mix old and new)
_GATHER_ATTEMPTS = 3


class _FileSpec(NamedTuple):
    """Which nodes must have a file, and what it must contain.

    ``expected`` is the checksum the content must have (computed from the
    configuration); without it, the copies must only agree.
    """
    candidates_only: bool = False
    optional: bool = False
    expected: str | None = None


def _Checksum(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def ComputeVerifyFiles(cluster: objects.Cluster,
                       ssconf_values: dict[str, str]) -> dict[str, _FileSpec]:
    """The files compared across nodes, by local path.

    Certificates and secrets must be identical on all nodes, config.data
    on the master candidates; the RAPI users file and, with file storage,
    the allowed storage paths may be absent, but then on every node. The
    ssconf files must hold what the configuration says.
    """
    files = {
        pathutils.NODED_CERT_FILE: _FileSpec(),
        pathutils.RAPI_CERT_FILE: _FileSpec(),
        pathutils.CLUSTER_DOMAIN_SECRET_FILE: _FileSpec(),
        # Optional: clusters made before the key existed have none
        pathutils.CONFD_HMAC_KEY: _FileSpec(optional=True),
        pathutils.RAPI_USERS_FILE: _FileSpec(optional=True),
        pathutils.CLUSTER_CONF_FILE: _FileSpec(candidates_only=True),
    }
    if {constants.DT_FILE, constants.DT_SHARED_FILE} & \
            set(cluster.enabled_disk_templates):
        files[pathutils.FILE_STORAGE_PATHS_FILE] = _FileSpec(optional=True)
    for key, value in ssconf_values.items():
        files[pathutils.SsconfFileName(key)] = _FileSpec(
            expected=_Checksum(value))
    return files


def _FileStorageDirs(cluster: objects.Cluster) -> list[str]:
    """The storage directories of the enabled file templates."""
    templates = cluster.enabled_disk_templates
    return sorted({path for template, path in (
        (constants.DT_FILE, cluster.file_storage_dir),
        (constants.DT_SHARED_FILE, cluster.shared_file_storage_dir))
        if template in templates and path})


def _NodeNames(nodes: dict[str, objects.Node], uuids: Any) -> str:
    return ", ".join(sorted(nodes[uuid].name for uuid in uuids))


class LUClusterVerifyGroup(LogicalUnit, _VerifyErrors):
    """Verify the nodes of one node group; its members then run the
    cluster-verify post hooks."""

    HPATH = "cluster-verify"
    HTYPE = constants.HTYPE_CLUSTER
    REQ_BGL = False

    def CheckArguments(self) -> None:
        CheckIgnoredCodes(self.op.ignore_errors)
        CheckSkippedChecks(self.op.skip_checks)

    def ExpandNames(self) -> None:
        self.group_uuid = self.cfg.LookupNodeGroup(self.op.group_name)
        self.needed_locks = {
            locking.LEVEL_NODEGROUP: [self.group_uuid],
            locking.LEVEL_NODE: [],
        }
        self.share_locks = dict.fromkeys(locking.LEVELS, 1)

    def DeclareLocks(self, level: int) -> None:
        if level == locking.LEVEL_NODE:
            # The members may change until the group lock is held
            self.needed_locks[locking.LEVEL_NODE] = \
                self.cfg.GetNodeGroup(self.group_uuid).members

    def CheckPrereq(self) -> None:
        self.group_info = self.cfg.GetNodeGroup(self.group_uuid)
        self.all_node_info = self.cfg.GetAllNodesInfo()
        members = set(self.group_info.members)
        unlocked = members - self.glm.list_owned(locking.LEVEL_NODE)
        if unlocked:
            raise errors.OpPrereqError(
                "Missing lock for nodes: %s" %
                _NodeNames(self.all_node_info, unlocked), errors.ECODE_STATE)
        self.my_node_info = {uuid: self.all_node_info[uuid]
                             for uuid in members}

    def BuildHooksEnv(self) -> dict[str, Any]:
        env = {"CLUSTER_TAGS":
               " ".join(sorted(self.cfg.GetClusterInfo().GetTags()))}
        env.update(("NODE_TAGS_%s" % node.name, " ".join(sorted(
            node.GetTags()))) for node in self.my_node_info.values())
        return env

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        return ([], sorted(self.my_node_info))

    def _GatherData(self, online: list[str], extra: list[str]) -> tuple:
        """Ask the nodes what is compared.

        ``online`` answer everything, ``extra`` (the master, when outside
        the group) only the file checksums. Returns the files to compare,
        the answers of ``online``, those plus ``extra`` and the time window
        bracketing the nodes' clocks. Nodes written to during the calls
        may hold a mix of old and new copies, so a configuration change
        meanwhile makes the nodes be asked again.
        """
        cluster_name = self.cfg.GetClusterName()
        for _ in range(_GATHER_ATTEMPTS):
            serial = self.cfg.GetConfigSerial()
            files = ComputeVerifyFiles(self.cfg.GetClusterInfo(),
                                       self.cfg.GetSsconfValues())
            file_list = [vcluster.MakeVirtualPath(path)
                         for path in sorted(files)]
            checks = {
                constants.NV_FILELIST: file_list,
                constants.NV_VERSION: None,
                constants.NV_TIME: None,
            }
            checks.update(self._NodeChecks())
            start = time.time()
            nvinfo = self.rpc.call_node_verify(online, checks, cluster_name)
            end = time.time()
            vf_nvinfo = dict(nvinfo)
            if extra:
                vf_nvinfo.update(self.rpc.call_node_verify(
                    extra, {constants.NV_FILELIST: file_list}, cluster_name))
            if self.cfg.GetConfigSerial() == serial:
                break
        return files, nvinfo, vf_nvinfo, start, end

    def _NodeChecks(self) -> dict[str, Any]:
        """Checks of the hypervisors and the file storage directories.

        Every enabled hypervisor verifies itself with its cluster-level
        parameters. Only the master reports forbidden allow-list entries
        (the list is the master's to distribute); every node checks that
        the storage directories of the enabled file templates are usable.
        """
        cluster = self.cfg.GetClusterInfo()
        checks: dict[str, Any] = {
            constants.NV_HYPERVISOR: {
                name: cluster.GetHVDefaults(name)
                for name in cluster.enabled_hypervisors},
        }
        templates = set(cluster.enabled_disk_templates)
        if templates & constants.DTS_FILEBASED:
            checks[constants.NV_ACCEPTED_STORAGE_PATHS] = \
                self.cfg.GetMasterNodeName()
        for template, key, path in (
                (constants.DT_FILE, constants.NV_FILE_STORAGE_PATH,
                 cluster.file_storage_dir),
                (constants.DT_SHARED_FILE,
                 constants.NV_SHARED_FILE_STORAGE_PATH,
                 cluster.shared_file_storage_dir)):
            if template in templates:
                checks[key] = path
        file_dirs = _FileStorageDirs(cluster)
        if file_dirs:
            checks[constants.NV_FILE_STORAGE_FILES] = file_dirs
        if constants.DT_DRBD8 in templates:
            checks[constants.NV_DRBDLIST] = None
        if constants.VERIFY_NPLUSONE_MEM not in self.op.skip_checks:
            # Ganeti asks the default (first enabled) hypervisor
            checks[constants.NV_HVINFO] = cluster.enabled_hypervisors[0]
        return checks

    def _NodeFreeMemory(self, ninfo: objects.Node,
                        nresult: dict) -> int | None:
        """The node's free memory as its hypervisor reports it."""
        hv_info = nresult.get(constants.NV_HVINFO)
        if not isinstance(hv_info, dict) or "memory_free" not in hv_info:
            self._Error(constants.CV_ENODEHV, ninfo.name,
                        "rpc call to node failed (hvinfo)")
            return None
        try:
            return int(hv_info["memory_free"])
        except (ValueError, TypeError):
            self._Error(constants.CV_ENODERPC, ninfo.name,
                        "node returned invalid nodeinfo, check hypervisor")
            return None

    def _VerifyNPlusOneMemory(self, mfree: dict[str, int]) -> None:
        """Ganeti's N+1 check: should one node fail, each node holding
        secondaries of its instances must have the memory to start those
        (auto-balanced ones, at their minimum memory) by a failover.

        Stopped instances count too, as someone may want to start them
        after the failure; nodes without figures (offline, no answer)
        are skipped, their problem is reported elsewhere.
        """
        cluster = self.cfg.GetClusterInfo()
        needed: dict[str, dict[str, int]] = {}
        for inst in self.cfg.GetAllInstancesInfo().values():
            if inst.primary_node not in self.my_node_info:
                continue
            bep = cluster.FillBE(inst)
            if not bep[objects.BE_AUTO_BALANCE]:
                continue
            for snode in self.cfg.GetInstanceSecondaryNodes(inst.uuid):
                by_primary = needed.setdefault(snode, {})
                by_primary[inst.primary_node] = (
                    by_primary.get(inst.primary_node, 0) +
                    bep[objects.BE_MINMEM])
        for node_uuid, by_primary in sorted(needed.items()):
            free = mfree.get(node_uuid)
            if free is None:
                continue
            for pnode_uuid, mem in sorted(by_primary.items()):
                # Ganeti's text, its spelling included: scripts match it
                self._ErrorIf(free < mem, constants.CV_ENODEN1,
                              self.all_node_info[node_uuid].name,
                              "not enough memory to accomodate instance"
                              " failovers should node %s fail (%dMiB needed,"
                              " %dMiB available)",
                              self.all_node_info[pnode_uuid].name, mem, free)

    def _VerifyNodeHypervisors(self, ninfo: objects.Node,
                               nresult: dict) -> None:
        """Report the hypervisors that found a problem on the node."""
        hyp_result = nresult.get(constants.NV_HYPERVISOR)
        if not ninfo.vm_capable or not isinstance(hyp_result, dict):
            return
        for hv_name, hv_result in sorted(hyp_result.items()):
            self._ErrorIf(hv_result is not None, constants.CV_ENODEHV,
                          ninfo.name, "hypervisor %s verify failure: '%s'",
                          hv_name, hv_result)

    def _VerifyAcceptedFileStoragePaths(self, ninfo: objects.Node,
                                        nresult: dict,
                                        is_master: bool) -> None:
        """Forbidden entries of the master's storage paths allow-list."""
        templates = set(self.cfg.GetClusterInfo().enabled_disk_templates)
        if is_master and templates & constants.DTS_FILEBASED:
            fspaths = nresult.get(constants.NV_ACCEPTED_STORAGE_PATHS)
            if fspaths is None:
                self._ErrorIf(True, constants.CV_ENODEFILESTORAGEPATHS,
                              ninfo.name, "Node did not return forbidden"
                              " file storage paths")
            else:
                self._ErrorIf(fspaths, constants.CV_ENODEFILESTORAGEPATHS,
                              ninfo.name,
                              "Found forbidden file storage paths: %s",
                              ", ".join(fspaths))
        else:
            self._ErrorIf(constants.NV_ACCEPTED_STORAGE_PATHS in nresult,
                          constants.CV_ENODEFILESTORAGEPATHS, ninfo.name,
                          "Node should not have returned forbidden file"
                          " storage paths")

    def _VerifyOrphanFiles(self, ninfo: objects.Node, nresult: dict) -> None:
        """Report disk files and instance directories in the file storage
        directories that no disk of the configuration accounts for, as
        Ganeti reports orphan volumes (a warning: left by an interrupted
        creation or by hand, used by no instance)."""
        listing = nresult.get(constants.NV_FILE_STORAGE_FILES)
        if not isinstance(listing, dict):
            return
        known = set()
        file_dir = self.cfg.GetClusterInfo().file_storage_dir
        for disk in self.cfg.GetAllDisksInfo().values():
            if disk.dev_type == constants.DT_SHARED_FILE or (
                    disk.dev_type == constants.DT_FILE and
                    (not disk.nodes or ninfo.uuid in disk.nodes)):
                known.add(os.path.normpath(disk.logical_id[1]))
            elif disk.dev_type == constants.DT_DRBD8 and file_dir and \
                    ninfo.uuid in disk.nodes:
                known.add(os.path.normpath(drbd.ImagePath(file_dir,
                                                          disk.uuid)))
        # The drbd template's directory, also when it holds no image
        known_dirs = {os.path.normpath(os.path.join(file_dir,
                                                    drbd.IMAGE_DIR))} \
            if file_dir else set()
        for path in known:
            parent = os.path.dirname(path)
            while parent not in known_dirs and parent != "/":
                known_dirs.add(parent)
                parent = os.path.dirname(parent)
        for base, entries in sorted(listing.items()):
            reported: list[str] = []
            for relpath, is_dir in sorted(entries):
                path = os.path.normpath(os.path.join(base, relpath))
                if any(utils.IsBelowDir(top, path) for top in reported):
                    continue
                if is_dir and path not in known_dirs:
                    reported.append(path)
                    self._Error(constants.CV_ENODEORPHANLV, ninfo.name,
                                "instance directory %s is unknown", path,
                                code=constants.CV_WARNING)
                elif not is_dir and path not in known:
                    self._Error(constants.CV_ENODEORPHANLV, ninfo.name,
                                "volume %s is unknown", path,
                                code=constants.CV_WARNING)

    def _VerifyInstanceDisks(self, online: list[str]) -> None:
        """Ganeti's disk checks of instances whose disks are active: the
        status of each disk on each of its (online) nodes in the group;
        a degraded one is a warning while its local disk is fine."""
        instances = sorted(
            (inst for inst in self.cfg.GetAllInstancesInfo().values()
             if inst.disks_active and inst.primary_node in self.my_node_info),
            key=lambda inst: inst.name)
        by_node: dict[str, list[tuple[objects.Instance, int,
                                      objects.Disk]]] = {}
        for inst in instances:
            for idx, disk in enumerate(self.cfg.GetInstanceDisks(inst.uuid)):
                for node_uuid in disk.nodes or [inst.primary_node]:
                    if node_uuid in online:
                        by_node.setdefault(node_uuid, []).append(
                            (inst, idx, disk))
        for node_uuid, items in sorted(by_node.items()):
            node_name = self.all_node_info[node_uuid].name
            result = self.rpc.call_blockdev_getmirrorstatus(
                node_uuid, [disk.ToDict() for _, _, disk in items])
            for pos, (inst, idx, _) in enumerate(items):
                if result.fail_msg:
                    self._Error(constants.CV_EINSTANCEFAULTYDISK, inst.name,
                                "couldn't retrieve status for disk/%s on %s:"
                                " %s", idx, node_name, result.fail_msg)
                    continue
                _, _, _, _, _, degraded, ldisk = result.payload[pos]
                if not degraded:
                    continue
                self._Error(constants.CV_EINSTANCEFAULTYDISK, inst.name,
                            "disk/%s on %s is degraded; local disk state is"
                            " '%s'", idx, node_name,
                            constants.LDS_NAMES.get(ldisk, ldisk),
                            code=constants.CV_WARNING
                            if ldisk in (constants.LDS_OKAY,
                                         constants.LDS_SYNC)
                            else constants.CV_ERROR)

    def _VerifyStoragePaths(self, ninfo: objects.Node, nresult: dict) -> None:
        """The storage directories of enabled file templates must be usable
        (allowed, existing, writable) on every node."""
        templates = self.cfg.GetClusterInfo().enabled_disk_templates
        for template, key, ecode in (
                (constants.DT_FILE, constants.NV_FILE_STORAGE_PATH,
                 constants.CV_ENODEFILESTORAGEPATHUNUSABLE),
                (constants.DT_SHARED_FILE,
                 constants.NV_SHARED_FILE_STORAGE_PATH,
                 constants.CV_ENODESHAREDFILESTORAGEPATHUNUSABLE)):
            if template in templates:
                self._ErrorIf(key in nresult, ecode, ninfo.name,
                              "The configured %s storage path is unusable:"
                              " %s", template, nresult.get(key))

    def _VerifyNode(self, ninfo: objects.Node, nresult: Any) -> bool:
        """Check the answer's form and the versions; True if usable."""
        test = not nresult or not isinstance(nresult, dict)
        self._ErrorIf(test, constants.CV_ENODERPC, ninfo.name,
                      "unable to verify node: no data returned")
        if test:
            return False
        remote_version = nresult.get(constants.NV_VERSION)
        test = not (isinstance(remote_version, (list, tuple)) and
                    len(remote_version) == 2)
        self._ErrorIf(test, constants.CV_ENODERPC, ninfo.name,
                      "connection to node returned invalid data")
        if test:
            return False
        test = remote_version[0] != constants.PROTOCOL_VERSION
        self._ErrorIf(test, constants.CV_ENODEVERSION, ninfo.name,
                      "incompatible protocol versions: master %s, node %s",
                      constants.PROTOCOL_VERSION, remote_version[0])
        if test:
            return False
        self._ErrorIf(remote_version[1] != constants.RELEASE_VERSION,
                      constants.CV_ENODEVERSION, ninfo.name,
                      "software version mismatch: master %s, node %s",
                      constants.RELEASE_VERSION, remote_version[1],
                      code=constants.CV_WARNING)
        return True

    def _VerifyNodeTime(self, ninfo: objects.Node, nresult: dict,
                        start: float, end: float) -> None:
        """The node's clock must be within the skew of the call's window."""
        ntime = nresult.get(constants.NV_TIME)
        if isinstance(ntime, bool) or not isinstance(ntime, (int, float)):
            self._ErrorIf(True, constants.CV_ENODETIME, ninfo.name,
                          "Node returned invalid time")
            return
        if ntime < start - constants.NODE_MAX_CLOCK_SKEW:
            diff = "%.01fs" % abs(start - ntime)
        elif ntime > end + constants.NODE_MAX_CLOCK_SKEW:
            diff = "%.01fs" % abs(ntime - end)
        else:
            diff = None
        self._ErrorIf(diff is not None, constants.CV_ENODETIME, ninfo.name,
                      "Node time diverges by at least %s from master node"
                      " time", diff)

    def _VerifyFiles(self, nodes: list[objects.Node], master_uuid: str,
                     nvinfo: dict, files: dict[str, _FileSpec]) -> None:
        """Compare the file checksums the nodes reported."""
        names = self.all_node_info
        ignore_nodes = set()
        # path -> checksum -> node UUIDs having that content
        fileinfo: dict[str, dict[str, set[str]]] = {path: {}
                                                    for path in files}
        for node in nodes:
            if node.offline:
                ignore_nodes.add(node.uuid)
                continue
            result = nvinfo[node.uuid]
            node_files: dict[str, str] = {}
            if not result.fail_msg and isinstance(result.payload, dict):
                reported = result.payload.get(constants.NV_FILELIST)
                if isinstance(reported, dict):
                    node_files = reported
            self._ErrorIf(not node_files, constants.CV_ENODEFILECHECK,
                          node.name, "Node did not return file checksum data")
            if not node_files:
                ignore_nodes.add(node.uuid)
                continue
            for vpath, checksum in node_files.items():
                path = vcluster.LocalizeVirtualPath(vpath)
                if path in fileinfo and checksum:
                    fileinfo[path].setdefault(checksum, set()).add(node.uuid)

        for path in sorted(files):
            spec = files[path]
            vpath = vcluster.MakeVirtualPath(path)
            checksums = fileinfo[path]
            with_file = set().union(*checksums.values()) - ignore_nodes
            expected_nodes = {
                node.uuid for node in nodes
                if not spec.candidates_only or node.master_candidate or
                node.uuid == master_uuid} - ignore_nodes
            missing = expected_nodes - with_file
            if spec.optional:
                self._ErrorIf(missing and missing != expected_nodes,
                              constants.CV_ECLUSTERFILECHECK, None,
                              "File %s is optional, but it must exist on all"
                              " or no nodes (not found on %s)", vpath,
                              _NodeNames(names, missing))
            else:
                self._ErrorIf(missing, constants.CV_ECLUSTERFILECHECK, None,
                              "File %s is missing from node(s) %s", vpath,
                              _NodeNames(names, missing))
                unexpected = with_file - expected_nodes
                self._ErrorIf(unexpected, constants.CV_ECLUSTERFILECHECK,
                              None, "File %s should not exist on node(s) %s",
                              vpath, _NodeNames(names, unexpected))
            if spec.expected is not None:
                differing = {uuid for checksum, uuids in checksums.items()
                             if checksum != spec.expected
                             for uuid in uuids} - ignore_nodes
                self._ErrorIf(differing, constants.CV_ECLUSTERFILECHECK,
                              None, "File %s differs from the cluster"
                              " configuration on node(s) %s", vpath,
                              _NodeNames(names, differing))
                continue
            variants = ["variant %d on %s" % (idx + 1,
                                              _NodeNames(names, uuids))
                        for idx, (_, uuids) in
                        enumerate(sorted(checksums.items()))]
            self._ErrorIf(len(checksums) > 1, constants.CV_ECLUSTERFILECHECK,
                          None, "File %s found with %s different checksums"
                          " (%s)", vpath, len(checksums), "; ".join(variants))

    def _VerifyOtherNotes(self, n_offline: int, n_drained: int,
                          i_offline: int) -> None:
        self._feedback_fn("* Other Notes")
        if i_offline:
            self._feedback_fn("  - NOTICE: %d offline instance(s) found." %
                              i_offline)
        if n_offline:
            self._feedback_fn("  - NOTICE: %d offline node(s) found." %
                              n_offline)
        if n_drained:
            self._feedback_fn("  - NOTICE: %d drained node(s) found." %
                              n_drained)

    def Exec(self, feedback_fn: Callable[[str], None]) -> bool:
        feedback_fn("* Verifying group '%s'" % self.group_info.name)
        if not self.my_node_info:
            feedback_fn("* Empty node group, skipping verification")
            return True
        self.bad = False
        self._feedback_fn = feedback_fn
        verbose = self.op.verbose
        master_uuid = self.cfg.GetMasterNode()
        nodes = sorted(self.my_node_info.values(), key=lambda n: n.name)
        online = [node.uuid for node in nodes if not node.offline]
        # File comparisons need the master's copies as a reference
        extra = [] if master_uuid in self.my_node_info else [master_uuid]

        feedback_fn("* Gathering data (%d nodes)" % len(nodes))
        if extra:
            feedback_fn("* Gathering information about the master node")
        files, nvinfo, vf_nvinfo, start, end = self._GatherData(online, extra)

        feedback_fn("* Verifying configuration file consistency")
        self._VerifyFiles(nodes + [self.all_node_info[uuid] for uuid in extra],
                          master_uuid, vf_nvinfo, files)

        feedback_fn("* Verifying node status")
        mfree: dict[str, int] = {}
        replicator = getattr(self.context, "replicator", None)
        behind = replicator.GetBehind() if replicator is not None else {}
        n_offline = n_drained = 0
        for node in nodes:
            if node.offline:
                if verbose:
                    feedback_fn("* Skipping offline node %s" % node.name)
                n_offline += 1
                continue
            if node.uuid == master_uuid:
                ntype = "master"
            elif node.master_candidate:
                ntype = "master candidate"
            elif node.drained:
                ntype = "drained"
                n_drained += 1
            else:
                ntype = "regular"
            if verbose:
                feedback_fn("* Verifying node %s (%s)" % (node.name, ntype))
            self._ErrorIf(node.uuid in behind, constants.CV_ENODESETUP,
                          node.name, "copy of the %s is behind the master's,"
                          " resynchronisation failing: %s",
                          "configuration and job queue"
                          if node.master_candidate else "ssconf files",
                          behind.get(node.uuid))
            msg = nvinfo[node.uuid].fail_msg
            self._ErrorIf(msg, constants.CV_ENODERPC, node.name,
                          "while contacting node: %s", msg)
            if msg:
                continue
            nresult = nvinfo[node.uuid].payload
            if self._VerifyNode(node, nresult):
                self._VerifyNodeTime(node, nresult, start, end)
                self._VerifyNodeHypervisors(node, nresult)
                self._VerifyAcceptedFileStoragePaths(
                    node, nresult, node.uuid == master_uuid)
                self._VerifyStoragePaths(node, nresult)
                self._VerifyOrphanFiles(node, nresult)
                if constants.NV_DRBDLIST in nresult:
                    for msg in NodeDrbdProblems(
                            self.cfg, node.uuid,
                            nresult[constants.NV_DRBDLIST]):
                        self._Error(constants.CV_ENODEDRBD, node.name, "%s",
                                    msg)
                if constants.VERIFY_NPLUSONE_MEM not in self.op.skip_checks:
                    free = self._NodeFreeMemory(node, nresult)
                    if free is not None:
                        mfree[node.uuid] = free

        feedback_fn("* Verifying instance status")
        self._VerifyInstanceDisks(online)

        if constants.VERIFY_NPLUSONE_MEM not in self.op.skip_checks:
            feedback_fn("* Verifying N+1 Memory redundancy")
            self._VerifyNPlusOneMemory(mfree)

        i_offline = sum(
            1 for inst in self.cfg.GetAllInstancesInfo().values()
            if inst.primary_node in self.my_node_info and
            inst.admin_state == objects.ADMINST_OFFLINE)
        self._VerifyOtherNotes(n_offline, n_drained, i_offline)
        return not self.bad
