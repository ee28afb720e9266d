"""The virtual cluster of the instance tests and the helpers they share.

``InstanceCluster`` sets a cluster up as an administrator would for
instances: every node has the shipped tinyimage OS (and any variants, see
``OsVariant``) in its OS search path and allows the cluster's file storage
directory in its file-storage-paths. The other helpers read the cluster's
configuration file and the node roots (disk image files, the fake
hypervisor's state files) so that tests check effects where they land.
"""

import base64
import contextlib
import dataclasses
import http.client
import json
import os
import shutil
import ssl
import stat
from collections.abc import Collection, Iterator, Mapping

from ganeti import constants, pathutils
from ganeti.rapi import client as rapi_client

from testutils_cluster import TOP, VirtualCluster, VirtualNode

NODE1 = "node1.example.test"
NODE2 = "node2.example.test"
NODE3 = "node3.example.test"
SHIPPED_OS = os.path.join(TOP, "os", "tinyimage")
# The cluster's file storage directory as every node sees it
FILE_VDIR = "/srv/ganeti/file-storage"
CHECKS = ("--no-name-check", "--no-ip-check")
MIB = 1024 * 1024
# RAPI users InstanceCluster(rapi_users=True) writes
ADMIN = ("admin", "s3cret")
READER = ("reader", "readpw")
RAPI_PORT = constants.DEFAULT_RAPI_PORT


OOB_SCRIPT = """#!/bin/sh
# Ganeti's OOB protocol: $1 the command, $2 the node name
dir=$(dirname "$0")
echo "$1 $2" >> "$dir/calls"
case "$1" in
  power-status)
    if [ -e "$dir/off-$2" ]; then echo '{"powered": false}'
    else echo '{"powered": true}'; fi ;;
  power-off) touch "$dir/off-$2" ;;
  power-on) rm -f "$dir/off-$2" ;;
  power-cycle) echo "not json" ;;
  health) echo '[["disk0", "OK"], ["fan", "WARNING"]]' ;;
esac
"""


def WriteOobProgram(directory: str) -> str:
    """OOB_SCRIPT as ``directory``/oob-program (executable); its path.
    The script records its calls in ``directory``/calls and keeps the
    nodes' power state as files there, so nothing is powered off."""
    program = os.path.join(directory, "oob-program")
    with open(program, "w", encoding="ascii") as fobj:
        fobj.write(OOB_SCRIPT)
    os.chmod(program, stat.S_IRWXU)
    return program


@dataclasses.dataclass(frozen=True)
class OsVariant:
    """A copy of tinyimage with some of its files replaced or removed.

    ``files`` maps a file name to its new content (a script when it starts
    with "#!", made executable) or to None to remove it; ``nodes`` names
    the nodes that get the OS (None: all of them).
    """

    files: Mapping[str, str | None]
    nodes: Collection[str] | None = None

    def Install(self, path: str) -> None:
        shutil.copytree(SHIPPED_OS, path, symlinks=True)
        for name, content in self.files.items():
            target = os.path.join(path, name)
            # Unlinked first: a link must not be written through
            if os.path.lexists(target):
                os.unlink(target)
            if content is None:
                continue
            with open(target, "w", encoding="ascii") as fobj:
                fobj.write(content)
            if content.startswith("#!"):
                os.chmod(target, 0o755)


def OsSearchDir(node: VirtualNode) -> str:
    """The node's first OS search directory (created)."""
    path = node.NodePath(pathutils.OS_SEARCH_PATH[0])
    os.makedirs(path, exist_ok=True)
    return path


def AllowFileStorage(node: VirtualNode, *paths: str) -> None:
    """Write the node's file-storage-paths allow-list."""
    allow = node.NodePath(pathutils.FILE_STORAGE_PATHS_FILE)
    os.makedirs(os.path.dirname(allow), exist_ok=True)
    with open(allow, "w", encoding="ascii") as fobj:
        fobj.write("# test\n" + "".join("%s\n" % path for path in paths))


def WriteRapiUsers(cluster: VirtualCluster) -> None:
    """Give ganeti-rapi the ADMIN (write) and READER (read) users."""
    with open(cluster.NodePath(pathutils.RAPI_USERS_FILE), "w",
              encoding="utf-8") as fobj:
        fobj.write("%s %s write\n%s %s read\n" % (ADMIN + READER))


@contextlib.contextmanager
def InstanceCluster(*init_args: str, nodes: Collection[str] = (NODE2, NODE3),
                    os_image: bool = True,
                    file_paths: Collection[str] = (FILE_VDIR, ),
                    extra_os: Mapping[str, OsVariant] | None = None,
                    rapi_users: bool = False,
                    env: dict[str, str] | None = None
                    ) -> Iterator[VirtualCluster]:
    """A started virtual cluster for instances, cleaned up on exit.

    ``init_args`` go to ``gnt-cluster init``; ``nodes`` are added after
    it. Without ``os_image`` the nodes get no tinyimage; with empty
    ``file_paths`` no allow-list is written (init's default stays).
    ``env`` adds to every node's environment (VirtualCluster).
    """
    cluster = VirtualCluster(env=env)
    try:
        cluster.Init(*init_args)
        for name in nodes:
            cluster.AddNode(name)
        for node in cluster.nodes.values():
            if os_image:
                os.symlink(SHIPPED_OS,
                           os.path.join(OsSearchDir(node), "tinyimage"))
            for os_name, variant in (extra_os or {}).items():
                if variant.nodes is None or node.name in variant.nodes:
                    variant.Install(os.path.join(OsSearchDir(node), os_name))
            if file_paths:
                AllowFileStorage(node, *file_paths)
        if rapi_users:
            WriteRapiUsers(cluster)
        yield cluster
    finally:
        cluster.Cleanup()


def Fail(cluster: VirtualNode, *args: str) -> str:
    """Run a command that must fail; its output (stdout and stderr)."""
    result = cluster.Run(*args, check=False)
    assert result.returncode != 0, (args, result.stdout)
    return result.stdout + result.stderr


def Field(cluster: VirtualNode, name: str, fields: str) -> str:
    """``gnt-instance list -o fields`` of one instance, "|"-separated."""
    return cluster.Run("gnt-instance", "list", "--no-headers",
                       "--separator=|", "-o", fields, name).stdout.strip()


def RemoveInstances(cluster: VirtualNode, *names: str,
                    extra: tuple[str, ...] = ()) -> None:
    """Remove instances where they exist (test clean-up)."""
    for name in names:
        cluster.Run("gnt-instance", "remove", "-f", *extra, name,
                    check=False)


def Config(cluster: VirtualNode) -> dict:
    """The cluster configuration as the master wrote it."""
    with open(cluster.NodePath(pathutils.CLUSTER_CONF_FILE),
              encoding="utf-8") as fobj:
        return json.load(fobj)


def FindInstance(cluster: VirtualNode, name: str) -> tuple[dict, list[dict]]:
    """An instance's configuration entry and its disks' (in order)."""
    config = Config(cluster)
    (inst, ) = [inst for inst in config["instances"].values()
                if inst["name"] == name]
    return inst, [config["disks"][uuid] for uuid in inst["disks"]]


def NodeUuid(cluster: VirtualNode, name: str) -> str:
    (uuid, ) = [uuid for uuid, node in Config(cluster)["nodes"].items()
                if node["name"] == name]
    return uuid


def PrimaryNode(cluster: VirtualNode, name: str) -> str:
    """The name of an instance's primary node."""
    inst, _ = FindInstance(cluster, name)
    return Config(cluster)["nodes"][inst["primary_node"]]["name"]


def DiskPaths(cluster: VirtualCluster, name: str,
              node_name: str) -> list[str]:
    """The local paths of an instance's disk files on one node."""
    _, disks = FindInstance(cluster, name)
    node = cluster.nodes[node_name]
    return [node.NodePath(disk["logical_id"][1]) for disk in disks]


def FakeState(node: VirtualNode, name: str) -> str:
    """The fake hypervisor's state file of an instance running on node."""
    return node.NodePath(os.path.join(pathutils.FAKE_HV_DIR, name))


def RapiClient(cluster: VirtualNode,
               user: tuple[str, str] = ADMIN
               ) -> rapi_client.GanetiRapiClient:
    """Ganeti's RAPI client for the cluster's master."""
    return rapi_client.GanetiRapiClient(
        cluster.node_ip, RAPI_PORT, username=user[0], password=user[1],
        curl_config_fn=rapi_client.GenericCurlConfig(proxy="", timeout=60))


def RapiRequest(cluster: VirtualNode, method: str, path: str, body=None,
                user: tuple[str, str] | None = ADMIN,
                context: ssl.SSLContext | None = None):
    """A request the client can't make; (status, decoded JSON answer).

    Without ``context`` the server's certificate is not checked; with
    ``user`` None the request carries no credentials.
    """
    if context is None:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    headers = {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(
            ("%s:%s" % user).encode()).decode()
    conn = http.client.HTTPSConnection(cluster.node_ip, RAPI_PORT,
                                       context=context, timeout=60)
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        payload = resp.read()
    finally:
        conn.close()
    return resp.status, json.loads(payload) if payload else None
