"""LUs reading and changing tags."""

import re
from typing import Any, Callable

from ganeti import constants, errors, locking, objects
from ganeti.cmdlib.base import NoHooksLU


class _TagsLU(NoHooksLU):
    """Common name resolution and locking of the tag LUs."""

    REQ_BGL = False
    _SHARED = 0

    def ExpandNames(self) -> None:
        self.needed_locks = {}
        kind, name = self.op.kind, self.op.name
        self._uuid = None
        if kind == constants.TAG_CLUSTER:
            self._uuid = self.cfg.GetClusterInfo().uuid
            return
        if not name:
            raise errors.OpPrereqError("Missing name for %s tags" % kind,
                                       errors.ECODE_INVAL)
        lookup = {
            constants.TAG_NODE: (self.cfg.ExpandNodeName,
                                 locking.LEVEL_NODE),
            constants.TAG_INSTANCE: (self.cfg.ExpandInstanceName,
                                     locking.LEVEL_INSTANCE),
            constants.TAG_NODEGROUP: (self.cfg.LookupNodeGroup,
                                      locking.LEVEL_NODEGROUP),
            constants.TAG_NETWORK: (self.cfg.LookupNetwork,
                                    locking.LEVEL_NETWORK),
        }
        if kind not in lookup:
            raise errors.OpPrereqError("Tags of kind %s are not supported" %
                                       kind, errors.ECODE_INVAL)
        expand, level = lookup[kind]
        self._uuid = expand(name)
        if self._uuid is None:
            raise errors.OpPrereqError("Unknown %s '%s'" % (kind, name),
                                       errors.ECODE_NOENT)
        self.needed_locks[level] = [self._uuid]
        self.share_locks[level] = self._SHARED

    @classmethod
    def RequiresBGL(cls, op: Any) -> bool:
        # Cluster tags change the cluster object, which has no lock level
        return cls._SHARED == 0 and op.kind == constants.TAG_CLUSTER

    def _GetTarget(self) -> Any:
        getter = {
            constants.TAG_CLUSTER: lambda _: self.cfg.GetClusterInfo(),
            constants.TAG_NODE: self.cfg.GetNodeInfo,
            constants.TAG_INSTANCE: self.cfg.GetInstanceInfo,
            constants.TAG_NODEGROUP: self.cfg.GetNodeGroup,
            constants.TAG_NETWORK: self.cfg.GetNetwork,
        }[self.op.kind]
        return getter(self._uuid)


class LUTagsGet(_TagsLU):
    """Return the tags of one object."""

    _SHARED = 1

    def Exec(self, feedback_fn: Callable[[str], None]) -> list[str]:
        return sorted(self._GetTarget().GetTags())


class LUTagsSearch(NoHooksLU):
    """Find tags matching a regular expression on every object."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def CheckPrereq(self) -> None:
        try:
            self._re = re.compile(self.op.pattern)
        except re.error as err:
            raise errors.OpPrereqError("Invalid search pattern '%s': %s" %
                                       (self.op.pattern, err),
                                       errors.ECODE_INVAL)

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        cfg = self.cfg
        objs = [("/cluster", cfg.GetClusterInfo())]
        objs += [("/instances/%s" % i.name, i)
                 for i in cfg.GetAllInstancesInfo().values()]
        objs += [("/nodes/%s" % n.name, n)
                 for n in cfg.GetAllNodesInfo().values()]
        objs += [("/nodegroup/%s" % g.name, g)
                 for g in cfg.GetAllNodeGroupsInfo().values()]
        return [(path, tag) for path, obj in objs
                for tag in sorted(obj.GetTags()) if self._re.search(tag)]


class LUTagsSet(_TagsLU):
    """Add tags to one object."""

    def CheckPrereq(self) -> None:
        for tag in self.op.tags:
            try:
                objects.ValidateTag(tag)
            except errors.TagError as err:
                raise errors.OpPrereqError(str(err), errors.ECODE_INVAL)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        target = self._GetTarget()
        for tag in self.op.tags:
            target.AddTag(tag)
        self.cfg.Update(target, feedback_fn)


class LUTagsDel(_TagsLU):
    """Remove tags from one object."""

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        target = self._GetTarget()
        missing = set(self.op.tags) - set(target.GetTags())
        if missing:
            raise errors.OpPrereqError(
                "Tag(s) %s not found" % ", ".join(
                    "'%s'" % t for t in sorted(missing)),
                errors.ECODE_NOENT)
        for tag in self.op.tags:
            target.RemoveTag(tag)
        self.cfg.Update(target, feedback_fn)
