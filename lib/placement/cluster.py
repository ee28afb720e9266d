"""The cluster configuration as Placement sees it: aggregates.

Placement's aggregates are bare UUIDs; the cluster gives some of them
names and metadata (``Cluster.aggregates``), and every node group is an
aggregate too, under the group's UUID and name. A node is in its group's
aggregate and in the named aggregates listed in ``Node.aggregates``.
These live in the configuration, so they are replicated with it.

The configuration objects (``objects.Cluster``, ``Node``, ``NodeGroup``)
are read by their attributes only: this package sits below them.
"""

from typing import Any, Iterable, Mapping

from ganeti import errors

Cluster = Any
Node = Any
NodeGroup = Any


def NamedAggregates(cluster: Cluster) -> dict[str, dict]:
    """The cluster's named aggregates: UUID -> {"name", "metadata"}."""
    return cluster.aggregates or {}


def NodeAggregates(node: Node) -> set[str]:
    """The aggregates a node is in: its group's and the named ones."""
    return {node.group} | set(node.aggregates or ())


def AggregateNames(cluster: Cluster,
                   groups: Mapping[str, NodeGroup]) -> dict[str, str]:
    """UUID -> name of every aggregate known by name (groups included)."""
    names = {uuid: group.name for uuid, group in groups.items()}
    names.update((uuid, agg["name"]) for uuid, agg
                 in NamedAggregates(cluster).items())
    return names


def FindNamedAggregate(cluster: Cluster, name: str) -> str | None:
    """The UUID of the named aggregate ``name`` (a name or a UUID)."""
    aggregates = NamedAggregates(cluster)
    if name in aggregates:
        return name
    for uuid, agg in aggregates.items():
        if agg["name"] == name:
            return uuid
    return None


def _Unknown(name: str) -> errors.OpPrereqError:
    return errors.OpPrereqError("Aggregate '%s' not known" % name,
                                errors.ECODE_NOENT)


def LookupNamedAggregate(cluster: Cluster, name: str) -> str:
    """Like FindNamedAggregate, raising OpPrereqError if unknown."""
    uuid = FindNamedAggregate(cluster, name)
    if uuid is None:
        raise _Unknown(name)
    return uuid


def LookupAggregate(cluster: Cluster,
                    groups: Mapping[str, NodeGroup],
                    name: str) -> str:
    """The UUID of an aggregate by name or UUID: a named aggregate, or a
    node group's (named aggregates win a name clash)."""
    uuid = FindNamedAggregate(cluster, name)
    if uuid is not None:
        return uuid
    for group_uuid, group in groups.items():
        if name in (group_uuid, group.name):
            return group_uuid
    raise _Unknown(name)


def _MetadataAggregates(cluster: Cluster, matches) -> list[str]:
    """The named aggregates with a metadata key ``matches`` accepts."""
    return sorted(uuid for uuid, agg in NamedAggregates(cluster).items()
                  if any(matches(key) for key in agg["metadata"]))


def ReservationMemberOf(cluster: Cluster, tags: Iterable[str]
                        ) -> dict[str, str]:
    """The ``member_of`` values the cluster adds to the allocation of an
    instance with ``tags``, each with what it stands for (for refusals).

    This is the deployer flow of the forbidden-aggregates spec, with the
    instance's tags in the role of the flavor's extra specs and the named
    aggregates' metadata keys in the role of Nova's aggregate metadata:

    - tags starting with the required prefix (``reservation:r1``) require
      an aggregate having one of them as a metadata key; naming one that
      no aggregate has is refused, not turned into "anywhere";
    - unless a tag starts with the default-forbidden prefix, every
      aggregate with a metadata key starting with it (the free pool's
      ``reservation:`` and each reservation's) is forbidden.
    """
    tags = set(tags)
    result = {}
    prefix = cluster.placement_required_prefix
    wanted = sorted(tag for tag in tags if prefix and tag.startswith(prefix))
    if wanted:
        uuids = _MetadataAggregates(cluster, wanted.__contains__)
        if not uuids:
            raise errors.OpPrereqError(
                "No aggregate has the metadata %s the instance's tags ask"
                " for" % ", ".join("'%s'" % tag for tag in wanted),
                errors.ECODE_NORES)
        value = "in:" + ",".join(uuids)
        result[value] = "member_of '%s' (aggregates with the metadata %s)" \
            % (value, ", ".join("'%s'" % tag for tag in wanted))
    prefix = cluster.placement_default_forbidden_prefix
    if prefix and not any(tag.startswith(prefix) for tag in tags):
        uuids = _MetadataAggregates(cluster,
                                    lambda key: key.startswith(prefix))
        if uuids:
            value = "!in:" + ",".join(uuids)
            result[value] = "member_of '%s' (the cluster's default: no" \
                " aggregate with metadata '%s...')" % (value, prefix)
    return result


def ResolveMemberOf(values: Iterable[str], cluster: Cluster,
                    groups: Mapping[str, NodeGroup]) -> list[str]:
    """``member_of`` values with aggregate names replaced by UUIDs.

    The forms are Placement's (``A``, ``in:A,B``, ``!A``, ``!in:A,B``);
    what is not an aggregate's name or UUID is refused here, so a typo
    never turns into a constraint matching nothing.
    """
    result = []
    for value in values:
        prefix = ""
        for form in ("!in:", "!", "in:"):
            if value.startswith(form):
                prefix = form
                break
        items = value[len(prefix):].split(",")
        if not all(items):
            raise errors.OpPrereqError("Invalid member_of value '%s'" %
                                       value, errors.ECODE_INVAL)
        result.append(prefix + ",".join(
            LookupAggregate(cluster, groups, item) for item in items))
    return result
