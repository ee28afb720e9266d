"""Virtual cluster support: many nodes of one cluster on one machine.

Following Ganeti's convention, ``GANETI_ROOTDIR`` names the node's root
directory (its last component is the node name) and ``GANETI_HOSTNAME`` the
node name; both are set together or not at all. Every path in pathutils is
prefixed with the root, and paths sent to other nodes are sent "virtual"
(without the root) so that the receiving node adds its own.
"""

import os

ENV_ROOTDIR = "GANETI_ROOTDIR"
ENV_HOSTNAME = "GANETI_HOSTNAME"


def _ReadEnv() -> tuple[str, str | None]:
    rootdir = os.environ.get(ENV_ROOTDIR, "")
    hostname = os.environ.get(ENV_HOSTNAME, "") or None
    if rootdir:
        rootdir = os.path.normpath(rootdir)
        if not os.path.isabs(rootdir):
            raise RuntimeError("%s must be an absolute path, not %r" %
                               (ENV_ROOTDIR, rootdir))
        if rootdir == "/":
            rootdir = ""
    if bool(rootdir) != bool(hostname):
        raise RuntimeError("%s and %s must be set together" %
                           (ENV_ROOTDIR, ENV_HOSTNAME))
    if rootdir and os.path.basename(rootdir) != hostname:
        raise RuntimeError("The last component of %s (%r) must be the node"
                           " name %r" % (ENV_ROOTDIR, rootdir, hostname))
    return rootdir, hostname


_ROOTDIR, _HOSTNAME = _ReadEnv()


def GetRootDirectory() -> str:
    """Return the node's root directory ("" for a real node)."""
    return _ROOTDIR


def GetVirtualHostname() -> str | None:
    """Return the node name set by the environment, or None."""
    return _HOSTNAME


def IsVirtual() -> bool:
    """Whether this process runs as a node of a virtual cluster."""
    return bool(_ROOTDIR)


def AddNodePrefix(path: str) -> str:
    """Put ``path`` (absolute) below this node's root."""
    assert os.path.isabs(path), "Path %r is not absolute" % path
    if _ROOTDIR:
        return _ROOTDIR + os.path.normpath(path)
    return path


def MakeVirtualPath(path: str) -> str:
    """Strip this node's root from ``path`` so another node can localize it."""
    if _ROOTDIR:
        if path != _ROOTDIR and not path.startswith(_ROOTDIR + "/"):
            raise ValueError("Path %r is not below the node root %r" %
                             (path, _ROOTDIR))
        return path[len(_ROOTDIR):] or "/"
    return path


def LocalizeVirtualPath(path: str) -> str:
    """Turn a virtual path received from another node into a local one."""
    return AddNodePrefix(path)


def NodeRootDirectory(node_name: str) -> str:
    """Root directory of another node of this virtual cluster ("" if real)."""
    if _ROOTDIR:
        return os.path.join(os.path.dirname(_ROOTDIR), node_name)
    return ""
