"""The base of the configuration objects: fields declared by annotations,
serialization, copies, defaults and checks; tags; the types of the fields.
"""

# Field annotations stay strings: ConfigObject reads them, never evaluates
from __future__ import annotations

import ipaddress
import operator
import re
import uuid as uuid_mod
from typing import Any, Self

from ganeti import constants, errors, ht, netutils
from ganeti.parameters.base import IMMUTABLE_TYPES, DeepCopy

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
