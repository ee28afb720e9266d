"""config.data on disk: reading it, and writing it from cached fragments.

config.data is assembled from cached JSON fragments, one per object
(published objects are never modified in place, so a fragment stays
valid as long as its object is in the configuration); a write re-encodes
only the objects it replaces and splices them in. The file is
byte-identical to a plain ``json.dumps(data, sort_keys=True,
separators=(",", ":"))`` (SerializeConfig).
"""

import json
from typing import Any, Callable

from ganeti import constants, errors, utils
from ganeti.config.snapshot import CONTAINERS, Snapshot
from ganeti.objects import Cluster, ConfigData, Maintenance

# stdlib json is about twice as fast as simplejson here, and both produce
# the same text for these settings
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode

# Top-level keys of config.data, in the (sorted) order they are written
_TOP_LEVEL_KEYS = ("cluster", "ctime", "disks", "filters", "instances",
                   "maintenance", "mtime", "networks", "nodegroups", "nodes",
                   "placement", "serial_no", "version")


def SerializeConfig(data: ConfigData) -> str:
    """config.data text of a whole configuration (the plain dump)."""
    return _ENCODE(data.ToDict())


def ReadConfigFile(cfg_file: str) -> ConfigData:
    """The configuration in ``cfg_file``, upgraded to the current objects;
    ConfigurationError if it cannot be read or is not a configuration,
    ConfigVersionMismatch if it is one of another version."""
    try:
        text = utils.ReadFile(cfg_file)
    except OSError as err:
        raise errors.ConfigurationError("Cannot read configuration file"
                                        " %s: %s" % (cfg_file, err))
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise errors.ConfigurationError("Configuration file %s is not"
                                        " valid JSON: %s" % (cfg_file, err))
    if not isinstance(raw, dict):
        raise errors.ConfigurationError("Configuration file %s does not"
                                        " hold an object" % cfg_file)
    version = raw.get("version")
    if version != constants.CONFIG_VERSION:
        raise errors.ConfigVersionMismatch(constants.CONFIG_VERSION, version)
    data = ConfigData.FromDict(raw)
    data.UpgradeConfig()
    return data


def WriteConfigFile(cfg_file: str, parts: list[bytes]) -> None:
    """Replace ``cfg_file`` by ``parts`` durably (atomic, fsynced)."""
    try:
        utils.WriteFile(cfg_file, fn=lambda fobj: fobj.writelines(parts),
                        mode=constants.CONFIG_FILE_MODE)
    except OSError as err:
        raise errors.ConfigurationError("Cannot write configuration file"
                                        " %s: %s" % (cfg_file, err))


class _ContainerText:
    """Serialized form of one container (e.g. "instances") of a snapshot.

    ``entries`` holds one ``"uuid":{...}`` fragment per object, in file
    order, and ``pos`` the index of each UUID in it, so that replacing an
    object means re-encoding one fragment and splicing it in.
    """

    __slots__ = ("objs", "entries", "pos", "text")

    def __init__(self, objs: dict, entries: list[bytes], pos: dict[str, int],
                 text: bytes):
        self.objs = objs
        self.entries = entries
        self.pos = pos
        self.text = text


class FileText:
    """The serialized form of the published snapshot, by fragments.

    Owned by one ConfigWriter and used only under its lock: Assemble
    prepares the text of a new snapshot, and the cache moves on to it
    only when the write succeeded.
    """

    def __init__(self) -> None:
        self._cluster: tuple[Cluster, bytes] | None = None
        self._maintenance: tuple[Maintenance, bytes] | None = None
        self._placement: tuple[dict, bytes] | None = None
        self._containers: dict[str, _ContainerText] = {}

    def Assemble(self, snap: Snapshot, changes: dict[str, dict[str, Any]],
                 published: Snapshot | None
                 ) -> tuple[list[bytes], Callable[[], None]]:
        """config.data of ``snap`` as byte strings, from cached fragments.

        ``snap`` is the ``published`` snapshot (None while the first one
        loads) with ``changes`` applied. New serialized forms go into the
        cache only when the returned commit function is called (after a
        successful write).
        """
        data = snap.data
        cluster_text = self._cluster
        if cluster_text is None or cluster_text[0] is not data.cluster:
            cluster_text = (data.cluster,
                            _ENCODE(data.cluster.ToDict()).encode("ascii"))
        values: dict[str, list[bytes]] = {"cluster": [cluster_text[1]]}
        maintenance_text = self._maintenance
        if data.maintenance is not None and (
                maintenance_text is None or
                maintenance_text[0] is not data.maintenance):
            maintenance_text = (data.maintenance, _ENCODE(
                data.maintenance.ToDict()).encode("ascii"))
        if maintenance_text is not None:
            values["maintenance"] = [maintenance_text[1]]
        placement_text = self._placement
        if data.placement is not None and (
                placement_text is None or
                placement_text[0] is not data.placement):
            placement_text = (data.placement,
                              _ENCODE(data.placement).encode("ascii"))
        if placement_text is not None:
            values["placement"] = [placement_text[1]]
        new_texts: dict[str, _ContainerText] = {}
        for container in CONTAINERS:
            cached = self._containers.get(container)
            if cached is None or cached.objs is not snap.Container(container):
                cached = self._BuildContainerText(
                    snap, container, cached, changes.get(container),
                    published)
                new_texts[container] = cached
            values[container] = [b"{", cached.text, b"}"]
        for key in ("ctime", "mtime", "serial_no", "version"):
            value = getattr(data, key)
            if value is not None:
                values[key] = [_ENCODE(value).encode("ascii")]
        parts: list[bytes] = []
        for key in _TOP_LEVEL_KEYS:
            if key in values:
                parts.append(b"%s%s:" % (b"," if parts else b"{",
                                         _ENCODE(key).encode("ascii")))
                parts.extend(values[key])
        parts.append(b"}")

        def commit() -> None:
            self._cluster = cluster_text
            self._maintenance = maintenance_text
            self._placement = placement_text
            self._containers.update(new_texts)

        return parts, commit

    @staticmethod
    def _BuildContainerText(snap: Snapshot, container: str,
                            old: _ContainerText | None,
                            items: dict[str, Any] | None,
                            published: Snapshot | None) -> _ContainerText:
        """Serialize a container, re-encoding only the changed objects.

        ``old`` is reused when it serializes the published snapshot's
        container, which ``items`` changed into the one of ``snap``.
        """
        objs = snap.Container(container)
        order = snap.order[container]

        def encode(uuid: str) -> bytes:
            return ("%s:%s" % (_ENCODE(uuid), _ENCODE(objs[uuid].ToDict()))
                    ).encode("ascii")

        if (old is None or items is None or published is None or
                old.objs is not published.Container(container)):
            entries = [encode(uuid) for uuid in order]
            pos = {uuid: idx for idx, uuid in enumerate(order)}
        elif all(uuid in old.pos and obj is not None
                 for uuid, obj in items.items()):
            entries = list(old.entries)
            pos = old.pos
            for uuid in items:
                entries[pos[uuid]] = encode(uuid)
        else:
            entries = [encode(uuid) if uuid in items
                       else old.entries[old.pos[uuid]] for uuid in order]
            pos = {uuid: idx for idx, uuid in enumerate(order)}
        return _ContainerText(objs, entries, pos, b",".join(entries))
