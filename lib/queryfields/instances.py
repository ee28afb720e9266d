"""Query fields of the ``instance`` resource, and what they are computed
from.

Configuration fields come from the instance, its disks and the cluster's
filled parameters; live fields (status, oper_*) from the
``all_instances_info`` answers of the online vm_capable nodes, which the
query (cmdlib.instance_query) fetches only when a requested or filtered
field needs them. The status values are Ganeti's: the admin state
combined with what the nodes report.
"""

import operator
from typing import Any, Callable

from ganeti import config, constants, objects, query
from ganeti.parameters.hypervisors import HV_PARAMETERS

# Per-index fields exist for this many disks and NICs (Ganeti's limits)
MAX_DISKS = 16
MAX_NICS = 8

# Titles of the be/<name> and hv/<name> fields (Ganeti's
# BES_PARAMETER_TITLES, HVS_PARAMETER_TITLES); the other parameters'
# fields are titled by the field name, as in Ganeti
_BE_TITLES = {
    objects.BE_MINMEM: "ConfigMinMem",
    objects.BE_MAXMEM: "ConfigMaxMem",
    objects.BE_VCPUS: "ConfigVCPUs",
    objects.BE_AUTO_BALANCE: "Auto_balance",
}
_HV_TITLES = {
    "acpi": "ACPI",
    "boot_order": "Boot_order",
    "cdrom_image_path": "CDROM_image_path",
    "cpu_type": "cpu_type",
    "disk_type": "Disk_type",
    "initrd_path": "Initrd_path",
    "kernel_path": "Kernel_path",
    "nic_type": "NIC_type",
    "pae": "PAE",
    "pci_pass": "pci_pass",
    "vnc_bind_address": "VNC_bind_address",
}


class InstanceQueryData:
    """What the instance fields are computed from, gathered once per query.

    The objects are those of one ``config.ConfigView``, shared with the
    configuration, so nothing here may change them. ``live_data`` maps
    instance UUIDs to their runtime information (None if no live field was
    asked for); ``wrong_node`` holds the instances found running on a node
    other than their primary; ``bad_nodes`` the nodes that did not answer;
    ``consoles`` the console descriptions of running instances, by UUID.
    """

    def __init__(self, instances: list[objects.Instance],
                 view: config.ConfigView,
                 live_data: dict[str, dict] | None = None,
                 wrong_node: set[str] | None = None,
                 bad_nodes: set[str] | None = None,
                 consoles: dict[str, dict] | None = None):
        self.instances = instances
        self.cluster = view.cluster
        self.nodes = view.nodes
        self.groups = view.nodegroups
        self.networks = view.networks
        self.disks = {inst.uuid: view.InstanceDisks(inst)
                      for inst in instances}
        self.live_data = live_data
        self.wrong_node = wrong_node or set()
        self.bad_nodes = bad_nodes or set()
        self.consoles = consoles or {}
        # The cluster's defaults, filled once for all instances
        self.nic_defaults = self.cluster.SimpleFillNIC(None)
        self.be_defaults = self.cluster.SimpleFillBE(None)
        self._hv_defaults: dict[tuple[str, str], dict] = {}

    def HvDefaults(self, inst: objects.Instance) -> dict:
        """``cluster.GetHVDefaults`` for the instance's hypervisor and OS,
        computed once per pair (the caller must not change it)."""
        key = (inst.hypervisor, inst.os)
        defaults = self._hv_defaults.get(key)
        if defaults is None:
            defaults = self._hv_defaults[key] = \
                self.cluster.GetHVDefaults(*key)
        return defaults

    def Items(self) -> list["InstanceItem"]:
        return [InstanceItem(self, inst) for inst in self.instances]


class InstanceItem:
    """One row of an instance query."""

    __slots__ = ("ctx", "inst", "disks", "filled_nics", "filled_hv",
                 "filled_be", "live")

    def __init__(self, ctx: InstanceQueryData, inst: objects.Instance):
        self.ctx = ctx
        self.inst = inst
        self.disks = ctx.disks[inst.uuid]
        # Computed on first use: the NICs', hypervisor and backend filled
        # parameters, and what Live() returns
        self.filled_nics: list[dict] | None = None
        self.filled_hv: dict | None = None
        self.filled_be: dict | None = None
        self.live: Any = None

    def NodeName(self, uuid: str) -> str:
        node = self.ctx.nodes.get(uuid)
        return node.name if node is not None else uuid

    def SecondaryNodes(self) -> list[str]:
        result = []
        for disk in self.disks:
            for uuid in disk.nodes or ():
                if uuid != self.inst.primary_node and uuid not in result:
                    result.append(uuid)
        return result

    def FilledHv(self) -> dict:
        """The effective hypervisor parameters (``cluster.FillHV``)."""
        if self.filled_hv is None:
            custom = {key: value for key, value
                      in (self.inst.hvparams or {}).items()
                      if key not in objects.HVC_GLOBALS}
            self.filled_hv = _Filled(self.ctx.HvDefaults(self.inst), custom)
        return self.filled_hv

    def FilledBe(self) -> dict:
        """The effective backend parameters (``cluster.FillBE``)."""
        if self.filled_be is None:
            self.filled_be = _Filled(self.ctx.be_defaults,
                                     self.inst.beparams)
        return self.filled_be

    def Live(self) -> Any:
        """The runtime information ({} if not running), or why none."""
        if self.live is None:
            node = self.ctx.nodes.get(self.inst.primary_node)
            if node is None or node.offline:
                self.live = query.FS_OFFLINE
            elif (node.uuid in self.ctx.bad_nodes or
                  self.ctx.live_data is None):
                self.live = query.FS_NODATA
            else:
                self.live = self.ctx.live_data.get(self.inst.uuid, {})
        return self.live


def _Filled(defaults: dict, custom: dict | None) -> dict:
    """``objects.FillDict`` for a query's answer, which is only read: the
    values are shared with ``defaults`` and ``custom`` instead of copied
    (as with the custom_* fields)."""
    filled = dict(defaults)
    if custom:
        filled.update(custom)
    return filled


def ComputeStatus(item: InstanceItem) -> str:
    """Ganeti's instance status (constants.INSTST_*)."""
    inst = item.inst
    live = item.Live()
    if live is query.FS_OFFLINE:
        return constants.INSTST_NODEOFFLINE
    if live is query.FS_NODATA:
        return constants.INSTST_NODEDOWN
    if live:
        if inst.uuid in item.ctx.wrong_node:
            return constants.INSTST_WRONGNODE
        # The guest powered itself off; its hypervisor process remains
        if live.get("state") == constants.HV_INSTANCE_SHUTDOWN:
            return constants.INSTST_USERDOWN
        if inst.admin_state == objects.ADMINST_UP:
            return constants.INSTST_RUNNING
        return constants.INSTST_ERRORUP
    if inst.admin_state == objects.ADMINST_UP:
        return constants.INSTST_ERRORDOWN
    if inst.admin_state == objects.ADMINST_DOWN:
        if inst.admin_state_source == objects.USER_SOURCE:
            return constants.INSTST_USERDOWN
        return constants.INSTST_ADMINDOWN
    return constants.INSTST_ADMINOFFLINE


def _LiveValue(key: str) -> Callable[[InstanceItem], Any]:
    def get(item: InstanceItem) -> Any:
        live = item.Live()
        if isinstance(live, query.FieldStatus):
            return live
        if not live:
            return query.FS_UNAVAIL
        return live.get(key, query.FS_UNAVAIL)
    return get


def _OperState(item: InstanceItem) -> Any:
    live = item.Live()
    if isinstance(live, query.FieldStatus):
        return live
    return bool(live)


def _Console(item: InstanceItem) -> Any:
    live = item.Live()
    if isinstance(live, query.FieldStatus):
        return live
    return item.ctx.consoles.get(item.inst.uuid, query.FS_UNAVAIL)


def _Indexed(values_of: Callable[[InstanceItem], list], idx: int
             ) -> Callable[[InstanceItem], Any]:
    def get(item: InstanceItem) -> Any:
        values = values_of(item)
        return values[idx] if idx < len(values) else query.FS_UNAVAIL
    return get


def _FilledNics(item: InstanceItem) -> list[dict]:
    if item.filled_nics is None:
        defaults = item.ctx.nic_defaults
        item.filled_nics = [_Filled(defaults, nic.nicparams)
                            for nic in item.inst.nics]
    return item.filled_nics


def _NicBridges(item: InstanceItem) -> list[Any]:
    return [params[objects.NIC_LINK]
            if params[objects.NIC_MODE] == objects.NIC_MODE_BRIDGED else None
            for params in _FilledNics(item)]


def _NicNetworkNames(item: InstanceItem) -> list[Any]:
    networks = item.ctx.networks
    return [networks[nic.network].name
            if nic.network is not None and nic.network in networks else None
            for nic in item.inst.nics]


def _HvParam(name: str) -> Callable[[InstanceItem], Any]:
    def get(item: InstanceItem) -> Any:
        return item.FilledHv().get(name, query.FS_UNAVAIL)
    return get


def _AllHvParams() -> dict[str, Any]:
    result: dict[str, Any] = {}
    for hv_name in sorted(constants.HYPER_TYPES):
        for name, spec in HV_PARAMETERS.get(hv_name, {}).items():
            result.setdefault(name, spec)
    return result


def _DiskFields() -> query.FieldTable:
    def attr(name: str) -> Callable[[InstanceItem], list]:
        get = operator.attrgetter(name)
        return lambda item: list(map(get, item.disks))

    sizes, names, uuids, spindles = (attr("size"), attr("name"),
                                     attr("uuid"), attr("spindles"))

    def template(item: InstanceItem) -> str:
        if not item.disks:
            return constants.DT_DISKLESS
        return item.disks[0].dev_type

    table: query.FieldTable = {
        "disk_template": ("Disk_template", constants.QFT_TEXT, template,
                          "Instance disk template"),
        "disk_usage": ("DiskUsage", constants.QFT_UNIT,
                       lambda item: sum(sizes(item)),
                       "Total disk space used by instance on each of its"
                       " nodes; this is not the disk size visible to the"
                       " instance, but the usage on the node"),
        "disk.count": ("Disks", constants.QFT_NUMBER,
                       lambda item: len(item.disks), "Number of disks"),
        "disk.sizes": ("Disk_sizes", constants.QFT_OTHER, sizes,
                       "List of disk sizes"),
        "disk.spindles": ("Disk_spindles", constants.QFT_OTHER, spindles,
                          "List of disk spindles"),
        "disk.names": ("Disk_names", constants.QFT_OTHER, names,
                       "List of disk names"),
        "disk.uuids": ("Disk_UUIDs", constants.QFT_OTHER, uuids,
                       "List of disk UUIDs"),
    }
    for idx in range(MAX_DISKS):
        table["disk.size/%d" % idx] = (
            "Disk/%d" % idx, constants.QFT_UNIT, _Indexed(sizes, idx),
            "Disk size of %s disk" % _Ordinal(idx))
        table["disk.spindles/%d" % idx] = (
            "DiskSpindles/%d" % idx, constants.QFT_NUMBER,
            _Indexed(spindles, idx),
            "Spindles of %s disk" % _Ordinal(idx))
        table["disk.name/%d" % idx] = (
            "DiskName/%d" % idx, constants.QFT_TEXT, _Indexed(names, idx),
            "Name of %s disk" % _Ordinal(idx))
        table["disk.uuid/%d" % idx] = (
            "DiskUUID/%d" % idx, constants.QFT_TEXT, _Indexed(uuids, idx),
            "UUID of %s disk" % _Ordinal(idx))
    return table


def _Ordinal(idx: int) -> str:
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(
        (idx + 1) % 10 if (idx + 1) % 100 not in (11, 12, 13) else 0, "th")
    return "%d%s" % (idx + 1, suffix)


def _NicFields() -> query.FieldTable:
    def attr(name: str) -> Callable[[InstanceItem], list]:
        get = operator.attrgetter(name)
        return lambda item: list(map(get, item.inst.nics))

    def param(name: str) -> Callable[[InstanceItem], list]:
        get = operator.itemgetter(name)
        return lambda item: list(map(get, _FilledNics(item)))

    per_nic = {
        # name: (list field, list title, index title, getter, doc)
        "mac": ("nic.macs", "NIC_MACs", "NicMAC", attr("mac"), "MAC address"),
        "ip": ("nic.ips", "NIC_IPs", "NicIP", attr("ip"), "IP address"),
        "name": ("nic.names", "NIC_Names", "NicName", attr("name"), "Name"),
        "uuid": ("nic.uuids", "NIC_UUIDs", "NicUUID", attr("uuid"), "UUID"),
        "mode": ("nic.modes", "NIC_modes", "NicMode",
                 param(objects.NIC_MODE), "Mode"),
        "link": ("nic.links", "NIC_links", "NicLink",
                 param(objects.NIC_LINK), "Link"),
        "vlan": ("nic.vlans", "NIC_VLANs", "NicVLAN",
                 param(objects.NIC_VLAN), "VLAN"),
        "bridge": ("nic.bridges", "NIC_bridges", "NicBridge", _NicBridges,
                   "Bridge (bridged mode only)"),
        "network": ("nic.networks", "NIC_networks", "NicNetwork",
                    attr("network"), "Network UUID"),
        "network.name": ("nic.networks.names", "NIC_networks_names",
                         "NicNetworkName", _NicNetworkNames,
                         "Network name"),
    }
    table: query.FieldTable = {
        "nic.count": ("NICs", constants.QFT_NUMBER,
                      lambda item: len(item.inst.nics),
                      "Number of network interfaces"),
    }
    for key, (list_name, list_title, title, getter, doc) in per_nic.items():
        table[list_name] = (list_title, constants.QFT_OTHER, getter,
                            "List containing each network interface's %s" %
                            doc.lower())
        for idx in range(MAX_NICS):
            table["nic.%s/%d" % (key, idx)] = (
                "%s/%d" % (title, idx), constants.QFT_TEXT,
                _Indexed(getter, idx),
                "%s of %s network interface" % (doc, _Ordinal(idx)))
    return table


def _ParamFields() -> query.FieldTable:
    table: query.FieldTable = {
        "hvparams": ("HypervisorParameters", constants.QFT_OTHER,
                     lambda item: item.FilledHv(),
                     "Hypervisor parameters (merged)"),
        "beparams": ("BackendParameters", constants.QFT_OTHER,
                     lambda item: item.FilledBe(),
                     "Backend parameters (merged)"),
        "osparams": ("OpSysParameters", constants.QFT_OTHER,
                     lambda item: item.ctx.cluster.SimpleFillOS(
                         item.inst.os, item.inst.osparams),
                     "Operating system parameters (merged)"),
        "custom_hvparams": ("CustomHypervisorParameters",
                            constants.QFT_OTHER,
                            lambda item: dict(item.inst.hvparams),
                            "Custom hypervisor parameters"),
        "custom_beparams": ("CustomBackendParameters", constants.QFT_OTHER,
                            lambda item: dict(item.inst.beparams),
                            "Custom backend parameters"),
        "custom_osparams": ("CustomOpSysParameters", constants.QFT_OTHER,
                            lambda item: dict(item.inst.osparams),
                            "Custom operating system parameters"),
        "custom_nicparams": ("CustomNicParameters", constants.QFT_OTHER,
                             lambda item: [dict(nic.nicparams)
                                           for nic in item.inst.nics],
                             "Custom network interface parameters"),
    }
    for name, spec in objects.BE_PARAMETERS.items():
        table["be/%s" % name] = (
            _BE_TITLES.get(name, "be/%s" % name), query.ParamFieldKind(spec),
            (lambda key: lambda item:
             item.FilledBe()[key])(name),
            "The \"%s\" backend parameter" % name)
    for name, spec in _AllHvParams().items():
        table["hv/%s" % name] = (
            _HV_TITLES.get(name, "hv/%s" % name), query.ParamFieldKind(spec),
            _HvParam(name), "The \"%s\" hypervisor parameter" % name)
    return table


def _BuildInstanceFields() -> query.FieldTable:
    def attr(name: str) -> Callable[[InstanceItem], Any]:
        return operator.attrgetter("inst." + name)

    def group_of(uuid: str, item: InstanceItem) -> Any:
        node = item.ctx.nodes.get(uuid)
        return node.group if node is not None else None

    def group_name(uuid: Any, item: InstanceItem) -> Any:
        group = item.ctx.groups.get(uuid)
        return group.name if group is not None else query.FS_UNAVAIL

    table: query.FieldTable = {
        "name": ("Instance", constants.QFT_TEXT, attr("name"),
                 "Instance name"),
        "os": ("OS", constants.QFT_TEXT, attr("os"), "Operating system"),
        "hypervisor": ("Hypervisor", constants.QFT_TEXT, attr("hypervisor"),
                       "Hypervisor name"),
        "pnode": ("Primary_node", constants.QFT_TEXT,
                  lambda item: item.NodeName(item.inst.primary_node),
                  "Primary node"),
        "pnode.group": ("PrimaryNodeGroup", constants.QFT_TEXT,
                        lambda item: group_name(
                            group_of(item.inst.primary_node, item), item),
                        "Primary node's group"),
        "pnode.group.uuid": ("PrimaryNodeGroupUUID", constants.QFT_TEXT,
                             lambda item: group_of(item.inst.primary_node,
                                                   item),
                             "Primary node's group UUID"),
        "snodes": ("Secondary_Nodes", constants.QFT_OTHER,
                   lambda item: [item.NodeName(uuid)
                                 for uuid in item.SecondaryNodes()],
                   "Secondary nodes; usually this will just be one node"),
        "snodes.group": ("SecondaryNodesGroups", constants.QFT_OTHER,
                         lambda item: [group_name(group_of(uuid, item), item)
                                       for uuid in item.SecondaryNodes()],
                         "Node groups of secondary nodes"),
        "snodes.group.uuid": ("SecondaryNodesGroupsUUID",
                              constants.QFT_OTHER,
                              lambda item: [group_of(uuid, item)
                                            for uuid in item.SecondaryNodes()],
                              "Node group UUIDs of secondary nodes"),
        "admin_state": ("InstanceState", constants.QFT_TEXT,
                        attr("admin_state"),
                        "Desired state of the instance"),
        "admin_state_source": ("InstanceStateSource", constants.QFT_TEXT,
                               attr("admin_state_source"),
                               "Who last changed the desired state of the"
                               " instance"),
        "admin_up": ("Autostart", constants.QFT_BOOL,
                     lambda item: item.inst.admin_state ==
                     objects.ADMINST_UP,
                     "Desired state of the instance: whether it should"
                     " run"),
        "disks_active": ("DisksActive", constants.QFT_BOOL,
                         attr("disks_active"),
                         "Desired state of the instance disks"),
        "network_port": ("Network_port", constants.QFT_OTHER,
                         attr("network_port"),
                         "Instance network port if available (e.g. for"
                         " VNC console)"),
        "forthcoming": ("Forthcoming", constants.QFT_BOOL,
                        lambda item: bool(item.inst.forthcoming),
                        "Whether the instance is only reserved"),
        "status": ("Status", constants.QFT_TEXT, ComputeStatus,
                   "Instance status; \"%s\" if instance is set to be"
                   " running and actually is, \"%s\" if instance is"
                   " stopped and is not running, \"%s\" if instance"
                   " running, but not on its designated primary node,"
                   " \"%s\" if instance should be stopped, but is"
                   " actually running, \"%s\" if instance should run,"
                   " but doesn't, \"%s\" if instance's primary node is"
                   " down, \"%s\" if instance's primary node is marked"
                   " offline, \"%s\" if instance is offline and does not"
                   " use dynamic resources, \"%s\" if the user shut the"
                   " instance down" %
                   (constants.INSTST_RUNNING, constants.INSTST_ADMINDOWN,
                    constants.INSTST_WRONGNODE, constants.INSTST_ERRORUP,
                    constants.INSTST_ERRORDOWN, constants.INSTST_NODEDOWN,
                    constants.INSTST_NODEOFFLINE,
                    constants.INSTST_ADMINOFFLINE,
                    constants.INSTST_USERDOWN)),
        "oper_state": ("Running", constants.QFT_BOOL, _OperState,
                       "Actual state of instance"),
        "oper_ram": ("Memory", constants.QFT_UNIT, _LiveValue("memory"),
                     "Actual memory usage as seen by hypervisor"),
        "oper_vcpus": ("VCPUs", constants.QFT_NUMBER, _LiveValue("vcpus"),
                       "Actual number of VCPUs as seen by hypervisor"),
        "console": ("Console", constants.QFT_OTHER, _Console,
                    "Instance console information"),
    }
    table.update(_ParamFields())
    table.update(_DiskFields())
    table.update(_NicFields())
    table.update(query._ObjectFields("Instance", "inst"))
    aliases = {
        "vcpus": "be/vcpus", "be/memory": "be/maxmem",
        "sda_size": "disk.size/0", "sdb_size": "disk.size/1",
        "ip": "nic.ip/0", "mac": "nic.mac/0", "bridge": "nic.bridge/0",
        "nic_mode": "nic.mode/0", "nic_link": "nic.link/0",
        "nic_network": "nic.network/0",
    }
    for alias, target in aliases.items():
        table[alias] = table[target]
    return table


INSTANCE_FIELDS = _BuildInstanceFields()
# Fields whose values come from the nodes (all_instances_info RPC)
INSTANCE_LIVE_FIELDS = frozenset(["status", "oper_state", "oper_ram",
                                  "oper_vcpus", "console"])
# Fields compared by name component in filters (query.MatchHostname)
INSTANCE_HOSTNAME_FIELDS = frozenset(["name"])
