"""Running LUs in-process against a real configuration.

``LUContext`` is what masterd's GanetiContext offers the LUs, with a real
ConfigWriter and lock manager; the node membership calls do what masterd
does to the config and locks and record what it would push to nodes. RPCs
to nodes go to ``FakeRpc``, which records them and answers as told.
"""

from ganeti import constants, locking, mcpu, objects, rpc_defs
from ganeti.rpc import node as rpc_node
from ganeti.rpc.client import RpcResult

from testutils_config import MakeConfig


def Ok(call, node, payload=None):
    return RpcResult(data=[True, payload], call=call, node=node)


def Failed(call, node, msg="connection refused"):
    return RpcResult(data=msg, failed=True, call=call, node=node)


class FakeRpc(rpc_node.RpcRunner):
    """The context's RPC runner: records calls, answers from ``answers``.

    Every ``call_<name>`` of rpc_defs exists, with the real runner's
    signature (it is inherited); only the transport is replaced, so a new
    RPC procedure needs nothing here. A call is recorded in ``calls`` as
    ``(procedure, node, *args)`` for a single-node call and ``(procedure,
    (node, ...), *args)`` for a multi-node one, with the arguments as the
    LU passed them.

    ``answers[(procedure, node)]`` is a payload, or an RpcResult to return
    as is; other calls succeed with the procedure's default payload (see
    ``_DEFAULT_PAYLOADS``; None for most). Nodes are whatever the LU passed
    (UUIDs, as with the real resolver, or names of nodes being added); an
    offline node answers offline.
    """

    # hooks_runner: nodes run no scripts unless told otherwise
    _DEFAULT_PAYLOADS = {"hooks_runner": []}

    def __init__(self, cfg):
        # No resolver, port or client: nothing is sent
        self.cfg = cfg
        self.calls = []
        self.answers = {}

    def close(self):
        pass

    def CallProcedure(self, procedure, nodes, args, read_timeout=None):
        call = rpc_defs.CALLS_BY_NAME[procedure]
        nodes = list(nodes)
        target = nodes[0] if call.kind == rpc_defs.CALL_SINGLE \
            else tuple(nodes)
        self.calls.append((procedure, target) + tuple(args))
        return {node: self._Answer(procedure, node) for node in nodes}

    def _Answer(self, procedure, node):
        answer = self.answers.get((procedure, node),
                                  self._DEFAULT_PAYLOADS.get(procedure))
        if isinstance(answer, RpcResult):
            return answer
        info = self.cfg.GetNodeInfo(self.cfg.ExpandNodeName(node) or node)
        name = info.name if info is not None else node
        if info is not None and info.offline:
            return RpcResult(offline=True, call=procedure, node=name)
        return Ok(procedure, name, answer)


class FakeDirectRunner:
    """Stands in for cmdlib.node._DirectRunner (nodes addressed by IP)."""

    def __init__(self, answers, calls, addresses, offline=None):
        self._answers = answers
        self._calls = calls
        self._addresses = addresses
        self._offline = set(offline or ())

    def _Call(self, procedure, name):
        self._calls.append((procedure, name, self._addresses[name]))
        if name in self._offline:
            return RpcResult(offline=True, call=procedure, node=name)
        answer = self._answers.get((procedure, name))
        if isinstance(answer, RpcResult):
            return answer
        if answer is None and procedure == "version":
            answer = constants.PROTOCOL_VERSION
        return Ok(procedure, name, answer)

    def call_version(self, node_list):
        return {name: self._Call("version", name) for name in node_list}

    def call_node_leave_cluster(self, node):
        return self._Call("node_leave_cluster", node)

    def close(self):
        pass


class LUContext:
    """GanetiContext for LUs run by ExecuteWithoutQueue."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.glm = locking.GanetiLockManager(
            cfg.GetNodeList(), list(cfg.GetAllNodeGroupsInfo()),
            cfg.GetInstanceList(), [])
        self.rpc = FakeRpc(cfg)
        # Node UUIDs brought up to date, as masterd would (AddNode,
        # ReaddNode, SyncNode)
        self.synced = []
        self.direct_calls = []
        self.direct_answers = {}

    def AddNode(self, node):
        self.cfg.AddNode(node)
        for level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            self.glm.add(level, node.uuid)
        self.synced.append(node.uuid)

    def ReaddNode(self, node):
        self.synced.append(node.uuid)

    def RemoveNode(self, node_uuid):
        self.cfg.RemoveNode(node_uuid)
        for level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            self.glm.remove(level, node_uuid)

    def SyncNode(self, node_uuid):
        self.synced.append(node_uuid)

    def DirectRunner(self, addresses, offline=None):
        return FakeDirectRunner(self.direct_answers, self.direct_calls,
                                addresses, offline)

    def Run(self, op, messages=None):
        """Run an opcode through the processor (validation, locks, LU)."""
        return mcpu.ExecuteWithoutQueue(
            self, op, feedback=messages.append if messages is not None
            else None)

    def NewNode(self, name, ip, group=None, **flags):
        """Put a node straight into the config (no LU, no RPC)."""
        node = objects.Node(name=name, primary_ip=ip, secondary_ip=ip,
                            group=group or self.cfg.LookupNodeGroup(
                                constants.DEFAULT_GROUP_NAME), **flags)
        self.cfg.AddNode(node)
        self.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL])
        try:
            for level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
                self.glm.add(level, node.uuid)
        finally:
            self.glm.release(locking.LEVEL_CLUSTER)
        return node.uuid

    def Node(self, name):
        return self.cfg.GetNodeInfoByName(name)

    def SetPoolSize(self, size):
        cluster = self.cfg.GetClusterInfo()
        cluster.candidate_pool_size = size
        self.cfg.Update(cluster)

    def AddInstance(self, name, primary, secondary=None, file_disk=False):
        """An instance on ``primary`` (diskless), DRBD with a
        ``secondary`` node, or with ``file_disk`` one file disk."""
        inst = objects.Instance(name=name, primary_node=primary,
                                hypervisor=constants.HT_FAKE, os="noop")
        disks = []
        if file_disk:
            disks.append(objects.Disk(
                dev_type=constants.DT_FILE, size=128, nodes=[primary],
                logical_id=[constants.FD_LOOP,
                            "/srv/ganeti/file-storage/%s/disk0" % name]))
        if secondary is not None:
            disks.append(objects.Disk(
                dev_type=constants.DT_DRBD8, size=128,
                logical_id=[primary, secondary, 11000, 0, 0, "secret"],
                nodes=[primary, secondary]))
        self.cfg.AddInstance(inst, disks)
        self.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL])
        try:
            self.glm.add(locking.LEVEL_INSTANCE, inst.uuid)
        finally:
            self.glm.release(locking.LEVEL_CLUSTER)
        return inst.uuid


def MakeContext(directory, monkeypatch=None):
    """A context over a fresh one-node configuration in ``directory``.

    With ``monkeypatch``, direct RPCs (to nodes addressed by IP) go to the
    context's fake runner.
    """
    context = LUContext(MakeConfig(str(directory)))
    if monkeypatch is not None:
        from ganeti.cmdlib import node as cmdlib_node
        monkeypatch.setattr(cmdlib_node, "_DirectRunner",
                            context.DirectRunner)
    return context
