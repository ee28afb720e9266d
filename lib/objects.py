"""Configuration objects: the in-memory form of config.data.

Field names are Ganeti's so that config.data stays readable by tools
written for Ganeti. Every object is a ConfigObject with ``__slots__``;
unset fields are None and are left out of the serialized form, so only
non-default values take space on disk (design-2.0 "Object parameters").

The parameter families (backend, NIC, node, disk, instance policy and
each hypervisor's) are declared in the layer below, ganeti.parameters;
the objects are filled and checked with them.
"""

# Field annotations name classes defined later in this module
from __future__ import annotations

import ipaddress
import operator
import re
import uuid as uuid_mod
from typing import Any, Iterable, Self

from ganeti import constants, errors, ht, impexp, netutils, pathutils
from ganeti.parameters.base import (IMMUTABLE_TYPES, CheckParamDict, DeepCopy,
                                    ExpandAliases, FillDict)
# The parameter families are declared in the parameter layer; their names
# are read here too, by the code handling the objects they belong to
from ganeti.parameters.families import (  # noqa: F401
    BE_ALWAYS_FAILOVER, BE_AUTO_BALANCE, BE_MAXMEM, BE_MEMORY, BE_MINMEM,
    BE_PARAMETERS, BE_SPINDLE_USE, BE_VCPUS, BEC_DEFAULTS, DISK_DEV_TYPES,
    DISK_DT_DEFAULTS, DISK_KERNELSPACE, DISK_PARAMETERS, DISK_USERSPACE,
    DISK_VALID_ACCESS_MODES, DT_GLUSTER, DT_RBD, IPOLICY_DEFAULTS,
    IPOLICY_DTS, IPOLICY_PARAMETERS, IPOLICY_SPINDLE_RATIO,
    IPOLICY_VCPU_RATIO, ISPEC_CPU_COUNT, ISPEC_DISK_COUNT, ISPEC_DISK_SIZE,
    ISPEC_MEM_SIZE, ISPEC_NIC_COUNT, ISPEC_PARAMETERS, ISPEC_SPINDLE_USE,
    ISPECS_MAX, ISPECS_MIN, ISPECS_MINMAX, ISPECS_MINMAX_DEFAULTS, ISPECS_STD,
    ND_CPU_SPEED, ND_EXCLUSIVE_STORAGE, ND_OOB_PROGRAM, ND_OVS, ND_OVS_LINK,
    ND_OVS_NAME, ND_PARAMETERS, ND_SPINDLE_COUNT, ND_SSH_PORT, NDC_DEFAULTS,
    NIC_LINK, NIC_MODE, NIC_MODE_BRIDGED, NIC_MODE_OVS, NIC_MODE_ROUTED,
    NIC_PARAMETERS, NIC_VALID_MODES, NIC_VLAN, NICC_DEFAULTS, PP_DEFAULT,
    CheckDiskParams, CheckIPolicy, FillIPolicy, TPort)
from ganeti.parameters.hypervisors import (  # noqa: F401
    HV_MIGRATION_BANDWIDTH, HV_MIGRATION_MODE, HV_MIGRATION_PORT, HVC_GLOBALS,
    CheckHvParams, HvDefaults)

# Instance states
ADMINST_UP = "up"
ADMINST_DOWN = "down"
ADMINST_OFFLINE = "offline"
ADMINST_ALL = frozenset([ADMINST_UP, ADMINST_DOWN, ADMINST_OFFLINE])
ADMIN_SOURCE = "admin"
USER_SOURCE = "user"
INSTANCE_STATE_SOURCES = frozenset([ADMIN_SOURCE, USER_SOURCE])

# Disks
DISK_RDWR = "rw"
DISK_RDONLY = "ro"
DISK_ACCESS_SET = frozenset([DISK_RDWR, DISK_RDONLY])

ALLOC_POLICY_PREFERRED = constants.ALLOC_POLICY_PREFERRED
VALID_ALLOC_POLICIES = constants.VALID_ALLOC_POLICIES

# Job filter rules
FILTER_ACCEPT = "ACCEPT"
FILTER_PAUSE = "PAUSE"
FILTER_REJECT = "REJECT"
FILTER_CONTINUE = "CONTINUE"
FILTER_RATE_LIMIT = "RATE_LIMIT"
FILTER_SIMPLE_ACTIONS = frozenset([FILTER_ACCEPT, FILTER_PAUSE, FILTER_REJECT,
                                   FILTER_CONTINUE])
FILTER_PREDICATES = frozenset(["jobid", "opcode", "reason"])

TAG_RE = re.compile(r"^[\w.+*/:@-]+$")
_MAC_RE = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")


def _IsIP(value: Any) -> bool:
    return isinstance(value, str) and netutils.IsValidIP(value)


def _IsNetwork(value: Any) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
        return True
    except ValueError:
        return False


_TIPAddress = ht.Check(_IsIP, "IP address", "string")
_TNetworkAddress = ht.Check(_IsNetwork, "network address (CIDR)", "string")
_TMac = ht.TRegex(_MAC_RE.pattern, "MAC address")
_TTimestamp = ht.TNonNegativeNumber
_TSerial = ht.TNonNegativeInt
_TStringList = ht.TListOf(ht.TString)
_TDictOfDicts = ht.TDictOf(ht.TString, ht.TDict)
# A named aggregate of the cluster (Placement's aggregates are bare UUIDs;
# the name and the metadata, e.g. "reservation:<id>", are the cluster's)
_TAggregate = ht.TStrictDict(True, True, {
    "name": ht.TNonEmptyString,
    "metadata": ht.TDictOf(ht.TNonEmptyString, ht.TString),
})
_TBitString = ht.TRegex(r"^[01]*$", "string of 0 and 1")


def NewUUID() -> str:
    """A random UUID, as used for every object's identity."""
    return str(uuid_mod.uuid4())


def _FieldNames(namespace: dict[str, Any]) -> list[str]:
    """The fields a class body declares: its public annotated names.

    Annotations are read without evaluating them: as stored in the
    namespace (stringized by ``from __future__ import annotations``), or
    through the deferred ``__annotate__`` function of Python 3.14+.
    """
    annotations = namespace.get("__annotations__")
    if annotations is None:
        try:
            import annotationlib  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            return []
        annotate = annotationlib.get_annotate_from_class_namespace(namespace)
        if annotate is None:
            return []
        annotations = annotationlib.call_annotate_function(
            annotate, annotationlib.Format.FORWARDREF)
    return [name for name in annotations if not name.startswith("_")]


class _ConfigObjectMeta(type):
    """Makes a ConfigObject's annotated fields its ``__slots__``.

    The annotations are the single declaration of the fields, read by the
    type checker as well as here.
    """

    def __new__(mcs, name: str, bases: tuple[type, ...],
                namespace: dict[str, Any], **kwargs: Any) -> type:
        namespace["__slots__"] = tuple(_FieldNames(namespace))
        return super().__new__(mcs, name, bases, namespace, **kwargs)


class ConfigObject(metaclass=_ConfigObjectMeta):
    """Base of all configuration objects.

    Subclasses declare their fields as class-level annotations (without
    values), which become their ``__slots__``; an unset field reads as
    None whatever its annotation says. ``_FIELD_CHECKS`` gives their
    types, ``_FIELD_DEFAULTS`` what UpgradeConfig fills in when a
    field is missing, ``_REQUIRED`` the fields that may not be None and
    ``_NESTED`` the fields holding other config objects, as
    ``(class, container)`` with container None, list or dict.
    """

    _FIELD_CHECKS: dict[str, ht.Check] = {}
    _FIELD_DEFAULTS: dict[str, Any] = {}
    _REQUIRED: frozenset[str] = frozenset()
    _NESTED: dict[str, tuple[type[ConfigObject], type | None]] = {}
    # Fields computed from the rest of the configuration, never stored
    _DERIVED: frozenset[str] = frozenset()
    # Filled by __init_subclass__ from the class hierarchy
    _ALL_SLOTS: tuple[str, ...] = ()
    _SLOT_SET: frozenset[str] = frozenset()
    _CHECKS: dict[str, ht.Check] = {}
    _DEFAULTS: dict[str, Any] = {}
    # Stored fields holding plain values, and C-level getters returning
    # tuples of field values (ToDict and Copy run for every object of a
    # large configuration, so they avoid per-field Python calls)
    _PLAIN_SLOTS: tuple[str, ...] = ()
    _GET_PLAIN: Any = None
    _GET_ALL: Any = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        slots: list[str] = []
        checks: dict[str, ht.Check] = {}
        defaults: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name in klass.__dict__.get("__slots__", ()):
                if name not in slots:
                    slots.append(name)
            checks.update(klass.__dict__.get("_FIELD_CHECKS", {}))
            defaults.update(klass.__dict__.get("_FIELD_DEFAULTS", {}))
        cls._ALL_SLOTS = tuple(slots)
        cls._SLOT_SET = frozenset(slots)
        cls._CHECKS = checks
        cls._DEFAULTS = defaults
        cls._UpdateGetters()

    @classmethod
    def _UpdateGetters(cls) -> None:
        """Recompute the field getters (again after _NESTED is set)."""
        cls._PLAIN_SLOTS = tuple(name for name in cls._ALL_SLOTS
                                 if name not in cls._NESTED and
                                 name not in cls._DERIVED)
        # The extra "__class__" makes attrgetter return a tuple even for a
        # single field; zip() with the slot names drops it again
        cls._GET_PLAIN = operator.attrgetter(*cls._PLAIN_SLOTS, "__class__")
        cls._GET_ALL = operator.attrgetter(*cls._ALL_SLOTS, "__class__")

    def __init__(self, **kwargs: Any):
        for name in self._ALL_SLOTS:
            setattr(self, name, None)
        for name, value in kwargs.items():
            if name not in self._SLOT_SET:
                raise TypeError("%s has no field %r" %
                                (self.__class__.__name__, name))
            setattr(self, name, value)
        self._Normalize()

    def _Normalize(self) -> None:
        """Turn serialized forms of special fields into in-memory ones."""

    def ClearDerived(self) -> None:
        """Unset the derived fields, as an object is stored without them."""
        for name in self._DERIVED:
            setattr(self, name, None)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name)
                   for name in self._ALL_SLOTS)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        ident = ["%s=%r" % (name, getattr(self, name))
                 for name in ("name", "uuid") if name in self._SLOT_SET and
                 getattr(self, name) is not None]
        return "<%s %s>" % (self.__class__.__name__, " ".join(ident))

    def Describe(self) -> str:
        """Human-readable identity for error messages."""
        for name in ("name", "uuid"):
            if name in self._SLOT_SET and getattr(self, name):
                return "%s %r" % (self.__class__.__name__.lower(),
                                  getattr(self, name))
        return self.__class__.__name__.lower()

    def ToDict(self) -> dict:
        """Serializable form; None fields are left out.

        The result shares plain dict and list values with the object, so
        it is meant to be serialized right away, not modified.
        """
        result = {name: value for name, value
                  in zip(self._PLAIN_SLOTS, self._GET_PLAIN(self))
                  if value is not None}
        for name, (_, container) in self._NESTED.items():
            value = getattr(self, name)
            if value is not None:
                result[name] = _NestedToDict(container, value)
        return result

    @classmethod
    def FromDict(cls, data: dict) -> Self:
        """Build an object from its serialized form.

        The dict's values are taken over, not copied. Unknown keys are
        refused so that a typo or a newer format is not silently dropped.
        """
        if not isinstance(data, dict):
            raise errors.ConfigurationError("Invalid %s: expected a"
                                            " dictionary, got %r" %
                                            (cls.__name__, type(data)))
        obj = cls.__new__(cls)
        for name in cls._ALL_SLOTS:
            setattr(obj, name, None)
        nested = cls._NESTED
        slot_set = cls._SLOT_SET
        for key, value in data.items():
            if key not in slot_set:
                raise errors.ConfigurationError("Unknown field %r in %s" %
                                                (key, cls.__name__))
            if value is not None and key in nested:
                value = _NestedFromDict(nested[key], value, key)
            setattr(obj, key, value)
        obj._Normalize()
        return obj

    def Copy(self) -> Self:
        """Independent deep copy."""
        cls = self.__class__
        new = cls.__new__(cls)
        for name, value in zip(cls._ALL_SLOTS, cls._GET_ALL(self)):
            if type(value) not in IMMUTABLE_TYPES:
                value = DeepCopy(value)
            setattr(new, name, value)
        return new

    def UpgradeConfig(self) -> None:
        """Fill fields missing in older or partial data with defaults."""
        for name, default in self._DEFAULTS.items():
            if getattr(self, name) is None:
                setattr(self, name, DeepCopy(default))
        for name in self._NESTED:
            _ForEachNested(getattr(self, name), lambda o: o.UpgradeConfig())

    def Validate(self) -> None:
        """Raise ConfigurationError if a field is missing or mistyped."""
        for name in self._REQUIRED:
            if getattr(self, name) is None:
                raise errors.ConfigurationError("%s: field %r is missing" %
                                                (self.Describe(), name))
        for name, check in self._CHECKS.items():
            value = getattr(self, name)
            if value is not None and not check(value):
                raise errors.ConfigurationError(
                    "%s: field %r must be %s, not %r" %
                    (self.Describe(), name, check, value))
        try:
            self._ValidateParams()
        except (errors.TypeEnforcementError, errors.TagError) as err:
            raise errors.ConfigurationError("%s: %s" % (self.Describe(), err))
        for name in self._NESTED:
            _ForEachNested(getattr(self, name), lambda o: o.Validate())

    def _ValidateParams(self) -> None:
        """Checks beyond field types; may raise TypeEnforcementError."""


def _NestedToDict(container: type | None, value: Any) -> Any:
    if container is None:
        return value.ToDict()
    if container is list:
        return [item.ToDict() for item in value]
    return {key: item.ToDict() for key, item in value.items()}


def _NestedFromDict(spec: tuple[type[ConfigObject], type | None],
                    value: Any, field: str) -> Any:
    klass, container = spec
    if container is None:
        return klass.FromDict(value)
    if container is list:
        if not isinstance(value, list):
            raise errors.ConfigurationError("Field %r must be a list" % field)
        return [klass.FromDict(item) for item in value]
    if not isinstance(value, dict):
        raise errors.ConfigurationError("Field %r must be a dictionary" %
                                        field)
    return {key: klass.FromDict(item) for key, item in value.items()}


def _ForEachNested(value: Any, fn: Any) -> None:
    if value is None:
        return
    if isinstance(value, ConfigObject):
        fn(value)
    elif isinstance(value, dict):
        for item in value.values():
            fn(item)
    else:
        for item in value:
            fn(item)


def ValidateTag(tag: Any) -> None:
    """Raise TagError, naming the tag, unless it is a valid tag."""
    if not isinstance(tag, str):
        raise errors.TagError("Invalid tag type (not a string): %r" % (tag,))
    if len(tag) > constants.MAX_TAG_LEN:
        raise errors.TagError("Tag too long (>%d characters): %r" %
                              (constants.MAX_TAG_LEN, tag))
    if not tag:
        raise errors.TagError("Tags cannot be empty")
    if not TAG_RE.match(tag):
        raise errors.TagError("Tag contains invalid characters: %r" % tag)


class TaggableObject(ConfigObject):
    """An object carrying tags: a set in memory, a sorted list on disk."""

    tags: set[str]
    _FIELD_DEFAULTS = {"tags": set()}

    ValidateTag = staticmethod(ValidateTag)

    def _Normalize(self) -> None:
        super()._Normalize()
        if self.tags is not None and not isinstance(self.tags, set):
            if not isinstance(self.tags, (list, tuple)):
                raise errors.ConfigurationError("%s: tags must be a list" %
                                                self.Describe())
            self.tags = set(self.tags)

    def ToDict(self) -> dict:
        result = super().ToDict()
        if "tags" in result:
            result["tags"] = sorted(result["tags"])
        return result

    def GetTags(self) -> set[str]:
        """The object's tags (a copy; change them with AddTag/RemoveTag)."""
        return set(self.tags or ())

    def AddTag(self, tag: str) -> None:
        """Add a tag; adding a present tag is a no-op."""
        ValidateTag(tag)
        if self.tags is None:
            self.tags = set()
        if tag in self.tags:
            return
        if len(self.tags) >= constants.MAX_TAGS_PER_OBJ:
            raise errors.TagError("Too many tags (at most %d), cannot add %r" %
                                  (constants.MAX_TAGS_PER_OBJ, tag))
        self.tags.add(tag)

    def RemoveTag(self, tag: str) -> None:
        """Remove a tag; a missing tag is an error."""
        ValidateTag(tag)
        if not self.tags or tag not in self.tags:
            raise errors.TagError("Tag not found: %r" % tag)
        self.tags.remove(tag)

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        if self.tags is None:
            return
        if not isinstance(self.tags, set):
            raise errors.TagError("tags must be a set, not %r" % (self.tags,))
        if len(self.tags) > constants.MAX_TAGS_PER_OBJ:
            raise errors.TagError("Too many tags (%d, at most %d)" %
                                  (len(self.tags), constants.MAX_TAGS_PER_OBJ))
        for tag in self.tags:
            ValidateTag(tag)


_TIMESTAMP_CHECKS = {"serial_no": _TSerial, "ctime": _TTimestamp,
                     "mtime": _TTimestamp, "uuid": ht.TNonEmptyString}


class NIC(ConfigObject):
    """A network interface of an instance (stored inside the instance)."""

    name: str | None
    mac: str
    ip: str | None
    network: str | None
    nicparams: dict[str, Any]
    netinfo: dict[str, Any] | None
    pci: int | None
    hvinfo: dict[str, Any] | None
    uuid: str
    _FIELD_CHECKS = {
        "name": ht.TString,
        "mac": _TMac,
        "ip": _TIPAddress,
        "network": ht.TNonEmptyString,
        "nicparams": ht.TDict,
        "netinfo": ht.TDict,
        "pci": ht.TNonNegativeInt,
        "hvinfo": ht.TDict,
        "uuid": ht.TNonEmptyString,
    }
    _FIELD_DEFAULTS = {"nicparams": {}}
    _REQUIRED = frozenset(["mac"])

    def UpgradeConfig(self) -> None:
        super().UpgradeConfig()
        if self.uuid is None:
            self.uuid = NewUUID()

    def _ValidateParams(self) -> None:
        CheckParamDict(NIC_PARAMETERS, self.nicparams or {}, "NIC")


class Disk(ConfigObject):
    """A disk (top-level, keyed by UUID) or a child device of one."""

    dev_type: str
    logical_id: list[Any]
    children: list[Disk]
    nodes: list[str]
    iv_name: str | None
    size: int
    mode: str | None
    params: dict[str, Any]
    spindles: int | None
    name: str | None
    pci: int | None
    hvinfo: dict[str, Any] | None
    forthcoming: bool | None
    dynamic_params: dict[str, Any] | None
    serial_no: int
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "dev_type": ht.TElemOf(DISK_DEV_TYPES),
        "logical_id": ht.TList,
        "nodes": _TStringList,
        "iv_name": ht.TString,
        "size": ht.TNonNegativeInt,
        "mode": ht.TElemOf(DISK_ACCESS_SET),
        "params": ht.TDict,
        "spindles": ht.TNonNegativeInt,
        "name": ht.TString,
        "pci": ht.TNonNegativeInt,
        "hvinfo": ht.TDict,
        "forthcoming": ht.TBool,
        "dynamic_params": ht.TDict,
    })
    _FIELD_DEFAULTS = {"params": {}, "nodes": [], "children": []}
    _REQUIRED = frozenset(["dev_type", "size", "logical_id"])


Disk._NESTED = {"children": (Disk, list)}
Disk._UpdateGetters()


class Node(TaggableObject):
    """A cluster node."""

    name: str
    primary_ip: str
    secondary_ip: str
    serial_no: int
    master_candidate: bool
    offline: bool
    drained: bool
    group: str
    master_capable: bool
    vm_capable: bool
    ndparams: dict[str, Any]
    powered: bool
    hv_state: dict[str, Any] | None
    hv_state_static: dict[str, Any]
    disk_state: dict[str, Any] | None
    disk_state_static: dict[str, Any]
    # UUIDs of the cluster aggregates the node is in, besides its group's
    # (unset, not stored, when none: older configurations stay as they are)
    aggregates: list[str] | None
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "name": ht.TNonEmptyString,
        "primary_ip": _TIPAddress,
        "secondary_ip": _TIPAddress,
        "master_candidate": ht.TBool,
        "offline": ht.TBool,
        "drained": ht.TBool,
        "group": ht.TNonEmptyString,
        "master_capable": ht.TBool,
        "vm_capable": ht.TBool,
        "ndparams": ht.TDict,
        "powered": ht.TBool,
        "hv_state": ht.TDict,
        "hv_state_static": ht.TDict,
        "disk_state": ht.TDict,
        "disk_state_static": ht.TDict,
        "aggregates": _TStringList,
    })
    _FIELD_DEFAULTS = {
        "master_candidate": False, "offline": False, "drained": False,
        "master_capable": True, "vm_capable": True, "powered": True,
        "ndparams": {}, "hv_state_static": {}, "disk_state_static": {},
    }
    _REQUIRED = frozenset(["name", "primary_ip", "uuid"])

    def UpgradeConfig(self) -> None:
        super().UpgradeConfig()
        if self.secondary_ip is None:
            self.secondary_ip = self.primary_ip

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        CheckParamDict(ND_PARAMETERS, self.ndparams or {}, "node")


class NodeGroup(TaggableObject):
    """A group of nodes sharing parameters and an allocation policy.

    ``members`` (node UUIDs) is derived from the nodes' ``group`` field and
    never stored.
    """

    name: str
    members: list[str]
    ndparams: dict[str, Any]
    diskparams: dict[str, dict[str, Any]]
    ipolicy: dict[str, Any]
    serial_no: int
    hv_state_static: dict[str, Any]
    disk_state_static: dict[str, Any]
    alloc_policy: str
    networks: dict[str, dict[str, Any]]
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "name": ht.TNonEmptyString,
        "members": _TStringList,
        "ndparams": ht.TDict,
        "diskparams": _TDictOfDicts,
        "ipolicy": ht.TDict,
        "hv_state_static": ht.TDict,
        "disk_state_static": ht.TDict,
        "alloc_policy": ht.TElemOf(VALID_ALLOC_POLICIES),
        "networks": _TDictOfDicts,
    })
    _FIELD_DEFAULTS = {
        "ndparams": {}, "diskparams": {}, "ipolicy": {},
        "hv_state_static": {}, "disk_state_static": {},
        "alloc_policy": ALLOC_POLICY_PREFERRED, "networks": {},
    }
    _REQUIRED = frozenset(["name", "uuid"])
    _DERIVED = frozenset(["members"])

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        CheckParamDict(ND_PARAMETERS, self.ndparams or {}, "group node")
        CheckDiskParams(self.diskparams or {}, "group disk")
        CheckIPolicy(self.ipolicy or {}, complete=False)
        for net_uuid, nicparams in (self.networks or {}).items():
            CheckParamDict(NIC_PARAMETERS, nicparams,
                           "network %s NIC" % net_uuid)

    def FillND(self, node: Node) -> dict:
        """The group's node parameters overridden by the node's."""
        return FillDict(self.ndparams or {}, node.ndparams)


class Instance(TaggableObject):
    """A virtual machine.

    ``disks`` holds the UUIDs of the instance's disks, which live in the
    configuration's top-level ``disks``. ``disk_template`` is only read
    from configurations older than 3.1; it is derived from the disks now.
    """

    name: str
    primary_node: str
    os: str
    hypervisor: str
    hvparams: dict[str, Any]
    beparams: dict[str, Any]
    osparams: dict[str, Any]
    osparams_private: dict[str, Any]
    admin_state: str
    admin_state_source: str
    nics: list[NIC]
    disks: list[str]
    disk_template: str | None
    disks_active: bool
    network_port: int | None
    forthcoming: bool | None
    serial_no: int
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "name": ht.TNonEmptyString,
        "primary_node": ht.TNonEmptyString,
        "os": ht.TString,
        "hypervisor": ht.TNonEmptyString,
        "hvparams": ht.TDict,
        "beparams": ht.TDict,
        "osparams": ht.TDict,
        "osparams_private": ht.TDict,
        "admin_state": ht.TElemOf(ADMINST_ALL),
        "admin_state_source": ht.TElemOf(INSTANCE_STATE_SOURCES),
        "nics": ht.TList,
        "disks": ht.TSetOf(ht.TNonEmptyString),
        "disks_active": ht.TBool,
        "network_port": TPort,
        "forthcoming": ht.TBool,
    })
    _FIELD_DEFAULTS = {
        "hvparams": {}, "beparams": {}, "osparams": {},
        "osparams_private": {}, "admin_state": ADMINST_DOWN,
        "admin_state_source": ADMIN_SOURCE, "nics": [], "disks": [],
        "disks_active": False,
    }
    _REQUIRED = frozenset(["name", "primary_node", "hypervisor", "uuid"])

    def UpgradeConfig(self) -> None:
        super().UpgradeConfig()
        self.beparams = ExpandAliases(BE_PARAMETERS, self.beparams)
        self.disk_template = None

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        CheckParamDict(BE_PARAMETERS, self.beparams or {}, "backend")
        if self.hypervisor:
            CheckHvParams(self.hypervisor, self.hvparams or {},
                          "instance hypervisor parameters")
        if HVC_GLOBALS & set(self.hvparams or {}):
            raise errors.TypeEnforcementError(
                "hypervisor parameters %s can only be set cluster-wide" %
                ", ".join(sorted(HVC_GLOBALS & set(self.hvparams))))


Instance._NESTED = {"nics": (NIC, list)}
Instance._UpdateGetters()


class Network(TaggableObject):
    """An IP network instances' NICs can be connected to."""

    name: str
    serial_no: int
    mac_prefix: str | None
    network: str
    gateway: str | None
    network6: str | None
    gateway6: str | None
    reservations: str | None
    ext_reservations: str | None
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "name": ht.TNonEmptyString,
        "mac_prefix": ht.TString,
        "network": _TNetworkAddress,
        "gateway": _TIPAddress,
        "network6": _TNetworkAddress,
        "gateway6": _TIPAddress,
        "reservations": _TBitString,
        "ext_reservations": _TBitString,
    })
    _REQUIRED = frozenset(["name", "network", "uuid"])
    # Keys of Ganeti 2.12's networks, dropped on load as Ganeti does
    _OBSOLETE_KEYS = ("network_type", "family")

    @classmethod
    def FromDict(cls, data: dict) -> Self:
        for key in cls._OBSOLETE_KEYS:
            data.pop(key, None)
        return super().FromDict(data)


def _IsFilterAction(value: Any) -> bool:
    if isinstance(value, str):
        return value in FILTER_SIMPLE_ACTIONS
    return (isinstance(value, list) and len(value) == 2 and
            value[0] == FILTER_RATE_LIMIT and ht.TStrictPositiveInt(value[1]))


def _IsFilterPredicate(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 2 and
            value[0] in FILTER_PREDICATES)


def _IsReasonEntry(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 3 and
            isinstance(value[0], str) and isinstance(value[1], str) and
            ht.TNumber(value[2]))


class FilterRule(ConfigObject):
    """A job filter rule (see design-optables)."""

    watermark: int
    priority: int
    predicates: list[list[Any]]
    action: str | list[Any]
    reason_trail: list[list[Any]]
    uuid: str
    _FIELD_CHECKS = {
        "watermark": ht.TNonNegativeInt,
        "priority": ht.TNonNegativeInt,
        "predicates": ht.TListOf(ht.Check(_IsFilterPredicate,
                                          "[jobid|opcode|reason, filter]")),
        "action": ht.Check(_IsFilterAction,
                           "ACCEPT, PAUSE, REJECT, CONTINUE or"
                           " [RATE_LIMIT, n]"),
        "reason_trail": ht.TListOf(ht.Check(_IsReasonEntry,
                                            "[source, reason, timestamp]")),
        "uuid": ht.TNonEmptyString,
    }
    _FIELD_DEFAULTS = {"watermark": 0, "priority": 0, "predicates": [],
                       "reason_trail": []}
    _REQUIRED = frozenset(["action", "uuid"])


Filter = FilterRule


def FillDataCollectors(settings: dict[str, dict[str, Any]] | None
                       ) -> dict[str, dict[str, Any]]:
    """Every data collector's settings, defaults (active, collected every
    MOND_TIME_INTERVAL seconds) where ``settings`` has none; as Ganeti,
    the interval is in microseconds."""
    defaults = {
        constants.DATA_COLLECTOR_STATE_ACTIVE: True,
        constants.DATA_COLLECTOR_PARAMETER_INTERVAL:
            constants.MOND_TIME_INTERVAL * 1000000,
    }
    return {name: FillDict(defaults, (settings or {}).get(name))
            for name in sorted(constants.DATA_COLLECTOR_NAMES)}


class Cluster(TaggableObject):
    """Cluster-wide settings and parameter defaults."""

    cluster_name: str
    serial_no: int
    rsahostkeypub: str
    dsahostkeypub: str | None
    highest_used_port: int
    tcpudp_port_pool: list[int]
    mac_prefix: str
    volume_group_name: str
    reserved_lvs: list[str]
    drbd_usermode_helper: str
    file_storage_dir: str
    shared_file_storage_dir: str
    gluster_storage_dir: str
    enabled_disk_templates: list[str]
    prealloc_wipe_disks: bool
    master_node: str
    master_ip: str
    master_netdev: str
    master_netmask: int
    use_external_mip_script: bool
    primary_ip_family: int
    default_bridge: str | None
    default_hypervisor: str | None
    enabled_hypervisors: list[str]
    hvparams: dict[str, dict[str, Any]]
    os_hvp: dict[str, dict[str, dict[str, Any]]]
    beparams: dict[str, dict[str, Any]]
    osparams: dict[str, dict[str, Any]]
    osparams_private_cluster: dict[str, dict[str, Any]]
    nicparams: dict[str, dict[str, Any]]
    ndparams: dict[str, Any]
    diskparams: dict[str, dict[str, Any]]
    ipolicy: dict[str, Any]
    candidate_pool_size: int
    modify_etc_hosts: bool
    modify_ssh_setup: bool
    ssh_key_type: str
    ssh_key_bits: int
    maintain_node_health: bool
    uid_pool: list[tuple[int, int]]
    candidate_certs: dict[str, str]
    default_iallocator: str
    default_iallocator_params: dict[str, Any]
    hidden_os: list[str]
    blacklisted_os: list[str]
    hv_state_static: dict[str, Any]
    disk_state_static: dict[str, Any]
    max_running_jobs: int
    max_tracked_jobs: int
    install_image: str
    instance_communication_network: str
    zeroing_image: str
    compression_tools: list[str]
    enabled_user_shutdown: bool
    data_collectors: dict[str, dict[str, Any]]
    # The self-diagnose command of ganeti-mond ("": always "Ok")
    diagnose_data_collector_filename: str
    # The named aggregates: UUID -> {"name", "metadata"} (unset when none)
    aggregates: dict[str, dict[str, Any]] | None
    # The deployer flow of Placement's forbidden aggregates ("": off), see
    # placement.cluster.ReservationMemberOf
    placement_required_prefix: str
    placement_default_forbidden_prefix: str
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "cluster_name": ht.TNonEmptyString,
        "rsahostkeypub": ht.TString,
        "dsahostkeypub": ht.TString,
        "highest_used_port": TPort,
        "tcpudp_port_pool": ht.TListOf(TPort),
        "mac_prefix": ht.TRegex(r"^([0-9a-fA-F]{2}:){2}[0-9a-fA-F]{2}$",
                                "MAC prefix (three octets)"),
        "volume_group_name": ht.TString,
        "reserved_lvs": _TStringList,
        "drbd_usermode_helper": ht.TString,
        "file_storage_dir": ht.TString,
        "shared_file_storage_dir": ht.TString,
        "gluster_storage_dir": ht.TString,
        "enabled_disk_templates": ht.TAnd(
            ht.TSetOf(ht.TElemOf(DISK_PARAMETERS)),
            ht.Check(bool, "non-empty")),
        "prealloc_wipe_disks": ht.TBool,
        "master_node": ht.TNonEmptyString,
        "master_ip": _TIPAddress,
        "master_netdev": ht.TNonEmptyString,
        "master_netmask": ht.TInRange(0, 128),
        "use_external_mip_script": ht.TBool,
        "primary_ip_family": ht.TElemOf([constants.IP4_FAMILY,
                                         constants.IP6_FAMILY]),
        "enabled_hypervisors": ht.TAnd(
            ht.TSetOf(ht.TNonEmptyString), ht.Check(bool, "non-empty")),
        "hvparams": _TDictOfDicts,
        "os_hvp": ht.TDictOf(ht.TString, _TDictOfDicts),
        "beparams": _TDictOfDicts,
        "osparams": _TDictOfDicts,
        "osparams_private_cluster": _TDictOfDicts,
        "nicparams": _TDictOfDicts,
        "ndparams": ht.TDict,
        "diskparams": _TDictOfDicts,
        "ipolicy": ht.TDict,
        "candidate_pool_size": ht.TStrictPositiveInt,
        "modify_etc_hosts": ht.TBool,
        "modify_ssh_setup": ht.TBool,
        "ssh_key_type": ht.TElemOf(["rsa", "dsa", "ecdsa"]),
        "ssh_key_bits": ht.TStrictPositiveInt,
        "maintain_node_health": ht.TBool,
        "uid_pool": ht.TListOf(ht.TTupleOf(ht.TNonNegativeInt,
                                           ht.TNonNegativeInt)),
        "candidate_certs": ht.TDictOf(ht.TString, ht.TString),
        "default_iallocator": ht.TString,
        "default_iallocator_params": ht.TDict,
        "hidden_os": _TStringList,
        "blacklisted_os": _TStringList,
        "hv_state_static": ht.TDict,
        "disk_state_static": ht.TDict,
        "max_running_jobs": ht.TStrictPositiveInt,
        "max_tracked_jobs": ht.TStrictPositiveInt,
        "install_image": ht.TString,
        "instance_communication_network": ht.TString,
        "zeroing_image": ht.TString,
        "compression_tools": _TStringList,
        "enabled_user_shutdown": ht.TBool,
        "data_collectors": _TDictOfDicts,
        "diagnose_data_collector_filename": ht.TString,
        "aggregates": ht.TDictOf(ht.TNonEmptyString, _TAggregate),
        "placement_required_prefix": ht.TString,
        "placement_default_forbidden_prefix": ht.TString,
    })
    _FIELD_DEFAULTS = {
        "rsahostkeypub": "",
        "highest_used_port": constants.FIRST_DRBD_PORT - 1,
        "tcpudp_port_pool": [],
        "mac_prefix": constants.DEFAULT_MAC_PREFIX,
        "volume_group_name": "",
        "reserved_lvs": [],
        "drbd_usermode_helper": constants.DEFAULT_DRBD_HELPER,
        "file_storage_dir": pathutils.DEFAULT_FILE_STORAGE_DIR,
        "shared_file_storage_dir": pathutils.DEFAULT_SHARED_FILE_STORAGE_DIR,
        "gluster_storage_dir": "",
        "enabled_disk_templates": list(
            constants.DEFAULT_ENABLED_DISK_TEMPLATES),
        "prealloc_wipe_disks": False,
        "master_netdev": constants.DEFAULT_MASTER_NETDEV,
        "master_netmask": constants.DEFAULT_MASTER_NETMASK,
        "use_external_mip_script": False,
        "primary_ip_family": constants.IP4_FAMILY,
        "enabled_hypervisors": [constants.HT_FAKE],
        "hvparams": {constants.HT_FAKE: {}},
        "os_hvp": {},
        "osparams": {},
        "osparams_private_cluster": {},
        "candidate_pool_size": constants.MASTER_POOL_SIZE_DEFAULT,
        "modify_etc_hosts": True,
        "modify_ssh_setup": True,
        "ssh_key_type": "rsa",
        "ssh_key_bits": 2048,
        "maintain_node_health": False,
        "uid_pool": [],
        "candidate_certs": {},
        "default_iallocator": constants.IALLOCATOR_BUILTIN,
        "default_iallocator_params": {},
        "hidden_os": [],
        "blacklisted_os": [],
        "hv_state_static": {},
        "disk_state_static": {},
        "max_running_jobs": constants.DEFAULT_MAX_RUNNING_JOBS,
        "max_tracked_jobs": constants.DEFAULT_MAX_TRACKED_JOBS,
        "install_image": "",
        "instance_communication_network": "",
        "zeroing_image": "",
        "compression_tools": list(impexp.IEC_DEFAULT_TOOLS),
        "enabled_user_shutdown": False,
        "data_collectors": {},
        "diagnose_data_collector_filename": "",
        "placement_required_prefix": "",
        "placement_default_forbidden_prefix": "",
    }
    _REQUIRED = frozenset(["cluster_name", "master_node", "master_ip",
                           "enabled_hypervisors", "enabled_disk_templates"])

    def _Normalize(self) -> None:
        super()._Normalize()
        # JSON has no tuples; ranges are pairs in memory
        if isinstance(self.uid_pool, list):
            self.uid_pool = [tuple(item) if isinstance(item, list) else item
                             for item in self.uid_pool]

    def ToDict(self) -> dict:
        result = super().ToDict()
        if "uid_pool" in result:
            result["uid_pool"] = [list(item) for item in result["uid_pool"]]
        return result

    def UpgradeConfig(self) -> None:
        """Fill defaults and move legacy fields to their current place."""
        if self.default_hypervisor is not None:
            hvs = [hv for hv in (self.enabled_hypervisors or [])
                   if hv != self.default_hypervisor]
            self.enabled_hypervisors = [self.default_hypervisor] + hvs
            self.default_hypervisor = None
        super().UpgradeConfig()
        self.hvparams = self.hvparams or {}
        for hv_name in set(self.enabled_hypervisors or []) | \
                set(self.hvparams):
            self.hvparams[hv_name] = FillDict(HvDefaults(hv_name),
                                              self.hvparams.get(hv_name))
        self.beparams = self.beparams or {}
        self.beparams[PP_DEFAULT] = FillDict(
            BEC_DEFAULTS, ExpandAliases(BE_PARAMETERS,
                                        self.beparams.get(PP_DEFAULT) or {}))
        self.nicparams = self.nicparams or {}
        nic_defaults = FillDict(NICC_DEFAULTS,
                                self.nicparams.get(PP_DEFAULT))
        if self.default_bridge is not None:
            nic_defaults[NIC_LINK] = self.default_bridge
            self.default_bridge = None
        self.nicparams[PP_DEFAULT] = nic_defaults
        self.ndparams = FillDict(NDC_DEFAULTS, self.ndparams)
        self.diskparams = self.diskparams or {}
        for template, defaults in DISK_DT_DEFAULTS.items():
            self.diskparams[template] = FillDict(
                defaults, self.diskparams.get(template))
        if self.ipolicy is None:
            self.ipolicy = FillDict(IPOLICY_DEFAULTS, {
                IPOLICY_DTS: list(self.enabled_disk_templates)})
        else:
            self.ipolicy = FillIPolicy(IPOLICY_DEFAULTS, self.ipolicy)
        self.data_collectors = FillDataCollectors(self.data_collectors)

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        for group, params in (self.beparams or {}).items():
            CheckParamDict(BE_PARAMETERS, params, "cluster %s backend" % group)
        for group, params in (self.nicparams or {}).items():
            CheckParamDict(NIC_PARAMETERS, params, "cluster %s NIC" % group)
        CheckParamDict(ND_PARAMETERS, self.ndparams or {}, "cluster node")
        CheckDiskParams(self.diskparams or {}, "cluster disk")
        CheckIPolicy(self.ipolicy or {}, complete=True)
        for hv_name, params in (self.hvparams or {}).items():
            CheckHvParams(hv_name, params, "cluster hypervisor parameters")
        for os_name, hvs in (self.os_hvp or {}).items():
            for hv_name, params in hvs.items():
                CheckHvParams(hv_name, params,
                              "hypervisor parameters of OS %s" % os_name)
        for hv in HVC_GLOBALS:
            for os_name, hvs in (self.os_hvp or {}).items():
                for hv_name, params in hvs.items():
                    if hv in params:
                        raise errors.TypeEnforcementError(
                            "%s cannot be set per OS (%s, %s)" %
                            (hv, os_name, hv_name))

    @property
    def primary_hypervisor(self) -> str:
        """The first enabled hypervisor, used when none is given."""
        return self.enabled_hypervisors[0]

    def GetHVDefaults(self, hypervisor: str, os_name: str | None = None,
                      skip_keys: Iterable[str] | None = None) -> dict:
        """Cluster defaults for a hypervisor, with an OS's overrides.

        The hypervisor's built-in defaults fill whatever the cluster lacks,
        so the result is complete even for a hypervisor never enabled.
        """
        result = FillDict(HvDefaults(hypervisor),
                          (self.hvparams or {}).get(hypervisor), skip_keys)
        if os_name is not None:
            os_hvp = (self.os_hvp or {}).get(os_name, {}).get(hypervisor,
                                                              {})
            result = FillDict(result, os_hvp, skip_keys)
        return result

    def FillHV(self, instance: Instance, skip_globals: bool = False) -> dict:
        """Effective hypervisor parameters of an instance.

        Cluster defaults, then the OS's, then the instance's. The
        migration settings (HVC_GLOBALS) come from the cluster only and
        are left out entirely with ``skip_globals``.
        """
        skip_keys = HVC_GLOBALS if skip_globals else None
        defaults = self.GetHVDefaults(instance.hypervisor, instance.os,
                                      skip_keys)
        custom = {key: value for key, value
                  in (instance.hvparams or {}).items()
                  if key not in HVC_GLOBALS}
        return FillDict(defaults, custom, skip_keys)

    def SimpleFillHV(self, hypervisor: str, os_name: str | None,
                     hvparams: dict, skip_globals: bool = False) -> dict:
        """Like FillHV, for parameters not yet attached to an instance."""
        skip_keys = HVC_GLOBALS if skip_globals else None
        return FillDict(self.GetHVDefaults(hypervisor, os_name, skip_keys),
                        hvparams, skip_keys)

    def SimpleFillBE(self, beparams: dict | None) -> dict:
        """Cluster backend defaults overridden by ``beparams``."""
        return FillDict(FillDict(BEC_DEFAULTS,
                                 (self.beparams or {}).get(PP_DEFAULT)),
                        beparams)

    def FillBE(self, instance: Instance) -> dict:
        """Effective backend parameters of an instance."""
        return self.SimpleFillBE(instance.beparams)

    def InstanceRpcDict(self, instance: Instance,
                        hvparams: dict | None = None,
                        beparams: dict | None = None) -> dict:
        """The instance as sent to a node: parameters filled.

        Nodes know no defaults (design-2.0 "Default value application"),
        so hvparams, beparams and each NIC's nicparams are the effective
        values; ``hvparams``/``beparams`` override them for one call
        (e.g. starting with temporary parameters).
        """
        result = instance.ToDict()
        result["hvparams"] = self.FillHV(instance)
        if hvparams:
            result["hvparams"].update(hvparams)
        result["beparams"] = self.FillBE(instance)
        if beparams:
            result["beparams"].update(beparams)
        result["nics"] = [dict(nic, nicparams=self.SimpleFillNIC(
            nic.get("nicparams"))) for nic in result.get("nics", [])]
        return result

    def SimpleFillNIC(self, nicparams: dict | None) -> dict:
        """Cluster NIC defaults overridden by ``nicparams``."""
        return FillDict(FillDict(NICC_DEFAULTS,
                                 (self.nicparams or {}).get(PP_DEFAULT)),
                        nicparams)

    def FillNIC(self, nic: NIC, nodegroup: NodeGroup | None = None) -> dict:
        """Effective parameters of a NIC.

        A NIC on a network gets the network's parameters in the node
        group of its instance's primary node before its own.
        """
        defaults = self.SimpleFillNIC(None)
        if nic.network and nodegroup is not None:
            defaults = FillDict(defaults,
                                (nodegroup.networks or {}).get(nic.network))
        return FillDict(defaults, nic.nicparams)

    def SimpleFillND(self, ndparams: dict | None) -> dict:
        """Cluster node defaults overridden by ``ndparams``."""
        return FillDict(FillDict(NDC_DEFAULTS, self.ndparams), ndparams)

    def FillND(self, node: Node, nodegroup: NodeGroup) -> dict:
        """Effective node parameters: cluster, then group, then node."""
        return self.SimpleFillND(nodegroup.FillND(node))

    def SimpleFillDP(self, diskparams: dict | None) -> dict:
        """Per-template disk parameters: cluster's, then ``diskparams``."""
        diskparams = diskparams or {}
        result = {}
        for template, defaults in DISK_DT_DEFAULTS.items():
            cluster_dp = FillDict(defaults,
                                  (self.diskparams or {}).get(template))
            result[template] = FillDict(cluster_dp, diskparams.get(template))
        return result

    def SimpleFillIPolicy(self, ipolicy: dict | None) -> dict:
        """The cluster's instance policy with a group's overrides."""
        return FillIPolicy(FillIPolicy(IPOLICY_DEFAULTS, self.ipolicy),
                           ipolicy)

    def SimpleFillOS(self, os_name: str, os_params: dict | None,
                     os_params_private: dict | None = None) -> dict:
        """Effective OS parameters.

        Defaults for the OS without variant, then for ``os+variant``, then
        the given values; public and private parameters follow the same
        chain and may not share a key.
        """
        base_name = os_name.split("+", 1)[0]
        public = FillDict(FillDict((self.osparams or {}).get(base_name, {}),
                                   (self.osparams or {}).get(os_name)),
                          os_params)
        private_defaults = self.osparams_private_cluster or {}
        private = FillDict(FillDict(private_defaults.get(base_name, {}),
                                    private_defaults.get(os_name)),
                           os_params_private)
        duplicate = set(public) & set(private)
        if duplicate:
            raise errors.OpPrereqError(
                "OS parameters %s appear both as public and private" %
                ", ".join(sorted(duplicate)), errors.ECODE_INVAL)
        public.update(private)
        return public


class Maintenance(ConfigObject):
    """ganeti-maintd's settings and state (config.data's ``maintenance``).

    It lives in the configuration, as design-maintd asks, so that it is
    replicated with it and a maintd on a new master carries on after a
    failover. The settings (``roundDelay``, ``balance``,
    ``balanceThreshold``, ``balanceDiskMoves``: whether balancing may move
    disks, ``balanceDynamicLoad``: whether it balances the nodes' dynamic
    load (from their monitoring daemons) too, ``harep``: whether maintd
    does harep's duties) are changed by OpClusterSetParams, ``canceled``
    (the incidents the admin canceled, which maintd never writes) by
    OpClusterRepairCancel; the rest is maintd's state, written through
    the master daemon: the incidents (dicts as ``/1/status`` reports
    them, plus maintd's own keys), the jobs of the current round, the
    evacuated nodes, the current round and the last ones.
    """

    roundDelay: int
    balance: bool
    balanceThreshold: float
    balanceDiskMoves: bool
    balanceDynamicLoad: bool
    harep: bool
    jobs: list[int]
    evacuated: list[str]
    incidents: list[dict[str, Any]]
    round: dict[str, Any] | None
    lastRounds: list[dict[str, Any]]
    lastRoundStart: float
    canceled: list[str]
    serial_no: int
    ctime: float
    mtime: float
    _FIELD_CHECKS = {
        "roundDelay": ht.TNonNegativeInt,
        "balance": ht.TBool,
        "balanceThreshold": ht.TNonNegativeNumber,
        "balanceDiskMoves": ht.TBool,
        "balanceDynamicLoad": ht.TBool,
        "harep": ht.TBool,
        "jobs": ht.TListOf(ht.TNonNegativeInt),
        "evacuated": ht.TListOf(ht.TString),
        "incidents": ht.TListOf(ht.TDict),
        "round": ht.TMaybe(ht.TDict),
        "lastRounds": ht.TListOf(ht.TDict),
        "lastRoundStart": ht.TNonNegativeNumber,
        "canceled": ht.TListOf(ht.TString),
        "serial_no": _TSerial, "ctime": _TTimestamp, "mtime": _TTimestamp,
    }
    _FIELD_DEFAULTS = {
        "roundDelay": constants.MAINTD_DEFAULT_ROUND_DELAY,
        "balance": False,
        "balanceThreshold": constants.MAINTD_DEFAULT_BALANCE_THRESHOLD,
        "balanceDiskMoves": True, "balanceDynamicLoad": False,
        "harep": False,
        "jobs": [], "evacuated": [], "incidents": [], "lastRounds": [],
        "lastRoundStart": 0.0, "canceled": [], "serial_no": 1,
    }

    # The fields maintd writes (the others are cluster parameters)
    STATE_FIELDS = ("jobs", "evacuated", "incidents", "round", "lastRounds",
                    "lastRoundStart")


class ConfigData(ConfigObject):
    """The whole configuration: what config.data holds."""

    version: int
    cluster: Cluster
    nodes: dict[str, Node]
    nodegroups: dict[str, NodeGroup]
    instances: dict[str, Instance]
    networks: dict[str, Network]
    disks: dict[str, Disk]
    filters: dict[str, FilterRule]
    maintenance: Maintenance
    # What the Placement API created (ganeti.placement.store), in its own
    # JSON form; unset until the API first changes something
    placement: dict[str, Any] | None
    serial_no: int
    ctime: float
    mtime: float
    _FIELD_CHECKS = {"version": ht.TInt, "serial_no": _TSerial,
                     "ctime": _TTimestamp, "mtime": _TTimestamp,
                     "placement": ht.TMaybeDict}
    _FIELD_DEFAULTS = {"nodes": {}, "nodegroups": {}, "instances": {},
                       "networks": {}, "disks": {}, "filters": {},
                       "serial_no": 1}
    _REQUIRED = frozenset(["version", "cluster"])
    _NESTED = {
        "cluster": (Cluster, None),
        "nodes": (Node, dict),
        "nodegroups": (NodeGroup, dict),
        "instances": (Instance, dict),
        "networks": (Network, dict),
        "disks": (Disk, dict),
        "filters": (FilterRule, dict),
        "maintenance": (Maintenance, None),
    }

    def UpgradeConfig(self) -> None:
        """Also give a configuration from before maintd its (empty)
        maintenance section."""
        if self.maintenance is None:
            self.maintenance = Maintenance()
        super().UpgradeConfig()

    @classmethod
    def FromDict(cls, data: dict) -> Self:
        missing = [key for key in ("version", "cluster") if key not in data]
        if missing:
            raise errors.ConfigurationError("Configuration lacks %s" %
                                            ", ".join(missing))
        return super().FromDict(data)



class OS(ConfigObject):
    """An OS definition found on a node (never stored in the config).

    ``path`` is the OS directory, the ``*_script`` fields the full paths
    of its scripts (``create_script_untrusted`` None when the OS has
    none); ``supported_parameters`` lists ``[name, description]`` pairs.
    """

    name: str
    path: str
    api_versions: list[int]
    create_script: str
    create_script_untrusted: str | None
    export_script: str
    import_script: str
    rename_script: str
    verify_script: str | None
    supported_variants: list[str]
    supported_parameters: list[list[str]]
    _FIELD_CHECKS = {
        "name": ht.TNonEmptyString,
        "path": ht.TNonEmptyString,
        "api_versions": ht.TListOf(ht.TNonNegativeInt),
        "supported_variants": _TStringList,
        "supported_parameters": ht.TListOf(ht.TListOf(ht.TString)),
    }
    _FIELD_DEFAULTS = {"api_versions": [], "supported_variants": [],
                       "supported_parameters": []}
    _REQUIRED = frozenset(["name", "path"])

    @staticmethod
    def SplitNameVariant(name: str) -> list[str]:
        """``[os_name, variant]`` of ``name+variant`` (variant "" if none)."""
        parts = name.split(constants.OS_VARIANT_DELIM, 1)
        if len(parts) < 2:
            parts.append("")
        return parts

    @staticmethod
    def NamesWithVariants(os_name: str,
                          os_variants: list[str] | None) -> list[str]:
        """The names an OS is used by: ``name+variant`` for each variant
        (the name alone if it has none)."""
        if os_variants:
            return ["%s%s%s" % (os_name, constants.OS_VARIANT_DELIM, variant)
                    for variant in os_variants]
        return [os_name]

    @classmethod
    def GetName(cls, name: str) -> str:
        """The OS name without its variant."""
        return cls.SplitNameVariant(name)[0]

    @classmethod
    def GetVariant(cls, name: str) -> str:
        """The variant part of an OS name ("" if none)."""
        return cls.SplitNameVariant(name)[1]

    def CheckVariant(self, name: str) -> None:
        """Refuse ``name`` (``os+variant``) unless its variant suits the OS.

        An OS with variants needs one of them named; one without refuses
        any variant.
        """
        variant = self.GetVariant(name)
        if not self.supported_variants:
            if variant:
                raise errors.OpPrereqError(
                    "OS '%s' doesn't support variants ('%s' passed)" %
                    (self.name, variant), errors.ECODE_INVAL)
            return
        if not variant:
            raise errors.OpPrereqError("OS name '%s' must include a variant"
                                       % name, errors.ECODE_INVAL)
        if variant not in self.supported_variants:
            raise errors.OpPrereqError("OS '%s' doesn't support variant '%s'"
                                       % (self.name, variant),
                                       errors.ECODE_INVAL)

    @property
    def is_trusted(self) -> bool:
        """Whether the OS may run its create script on the node itself.

        Only OSes shipping a ``create_untrusted`` script need the install
        helper VM; Ganeti calls the others trusted.
        """
        return not self.create_script_untrusted
