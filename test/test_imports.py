"""The import graph of the ``ganeti`` package: no cycles, no upward imports.

The graph is built statically (ast over lib/), with the imports inside
functions, so a late import cannot hide a cycle or an upward dependency.
The layers are declared once, in LAYERS.
"""

import ast
import importlib
import os

import pytest

pytestmark = pytest.mark.unit

_LIB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "lib")

# Layer name -> (the layers it builds on directly, its modules). A module
# belongs to the layer of the longest entry equal to its name or to one
# of its parent packages. An import may go to the same layer or to any
# layer reached through "builds on"; cycles are refused separately.
LAYERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # Names, errors, type checks and helpers used everywhere; they know
    # nothing of the cluster. impexp and http are here as packages only:
    # their __init__ holds the names and errors that opcodes and the CLI
    # share with the transfer and server code (in "services").
    "foundation": ((), (
        "ganeti", "ganeti.constants", "ganeti.errors", "ganeti.ht",
        "ganeti.vcluster", "ganeti.pathutils", "ganeti.serializer",
        "ganeti.netutils", "ganeti.qlang", "ganeti.utils",
        "ganeti.rpc_defs", "ganeti.impexp", "ganeti.http")),
    # The parameter families: declarations, conversion, merging
    "parameters": (("foundation", ), ("ganeti.parameters", )),
    # Placement planning (the built-in allocator, balancing, capacity):
    # pure computation on iallocator messages
    # (with Placement's member_of semantics for the aggregate constraints)
    "htools": (("parameters", "placement"), ("ganeti.htools", )),
    # Configuration objects, the opcodes (jobs as data) and the address
    # pools of the network objects
    "objects": (("parameters", ), ("ganeti.objects", "ganeti.opcodes",
                                   "ganeti.opcodes_base",
                                   "ganeti.opcodes_instance",
                                   "ganeti.opcodes_cluster",
                                   "ganeti.opcodes_node",
                                   "ganeti.opcodes_group",
                                   "ganeti.opcodes_network",
                                   "ganeti.network")),
    # What the master and the nodes build on: configuration, RPC, LUXI,
    # locks, hypervisors, storage, the transfer of disks, HTTP servers,
    # daemon plumbing, hooks, the replication of files and the data
    # collectors of the monitoring daemon (the allocator message carries
    # the nodes' Placement aggregates)
    "services": (("objects", "placement"), (
        "ganeti.config", "ganeti.ssconf", "ganeti.locking", "ganeti.rpc",
        "ganeti.luxi", "ganeti.hypervisor", "ganeti.storage",
        "ganeti.monitoring",
        "ganeti.impexp.master", "ganeti.impexp.node",
        "ganeti.impexp.transfer", "ganeti.impexp.endpoints",
        "ganeti.http.server", "ganeti.http.connection", "ganeti.http.auth",
        "ganeti.daemon", "ganeti.hooksmaster", "ganeti.masterd")),
    # The node's procedures (noded's implementation) and the setting up
    # of a cluster and of joining nodes, which run them locally
    "node": (("services", ), ("ganeti.backend", "ganeti.bootstrap")),
    # The query engine and the one registry of the resources' fields,
    # read by the master and by the RAPI daemon
    "query": (("services", ), ("ganeti.query", "ganeti.queryfields")),
    # The logical units
    "master": (("node", "query", "placement"), ("ganeti.cmdlib", )),
    # Running opcodes and the job queue
    "jobs": (("master", ), ("ganeti.mcpu", "ganeti.jqueue")),
    # The Placement service's model and request semantics (served by RAPI,
    # applied by the allocator): pure computation, configuration objects
    # read by their attributes only
    "placement": (("foundation", ), ("ganeti.placement", )),
    # The master's clients: the CLI library and the RAPI resources reach
    # the master over LUXI only, never its code (cmdlib, jqueue)
    "clients": (("query", "placement"), ("ganeti.cli", "ganeti.cli_opts",
                                         "ganeti.cli_output",
                                         "ganeti.cli_format",
                                         "ganeti.cli_jobs", "ganeti.rapi")),
    # Programs: the gnt-* commands and the daemons; hbal and hspace plan
    # with the htools on what they read over LUXI, harep repairs with
    # maintd's auto-repair rules
    "programs": (("jobs", "clients", "htools"),
                 ("ganeti.client", "ganeti.server", "ganeti.watcher",
                  "ganeti.maintd")),
}


def ModuleFiles(lib: str) -> dict[str, str]:
    """Module name -> file, for every module of the package in ``lib``."""
    result = {}
    for root, dirs, files in os.walk(lib):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        for name in files:
            if not name.endswith(".py"):
                continue
            parts = os.path.relpath(os.path.join(root, name),
                                    lib)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            result[".".join(["ganeti"] + parts)] = os.path.join(root, name)
    return result


def _Resolve(name: str, modules: dict[str, str]) -> str:
    # "ganeti.cli.FormatUnit" -> "ganeti.cli"; packages are modules too
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def BuildGraph(lib: str) -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in its code)."""
    modules = ModuleFiles(lib)
    graph = {}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as fobj:
            tree = ast.parse(fobj.read(), path)
        is_package = path.endswith("__init__.py")
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(_Resolve(alias.name, modules)
                               for alias in node.names
                               if alias.name.split(".")[0] == "ganeti")
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = module if is_package else \
                        module.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = "%s.%s" % (package, base) if base else package
                if base.split(".")[0] != "ganeti":
                    continue
                targets.update(_Resolve("%s.%s" % (base, alias.name),
                                        modules) for alias in node.names)
        targets.discard(module)
        graph[module] = targets
    return graph


def LayerOf(module: str, layers: dict) -> str | None:
    """The layer of a module (longest matching declaration), or None."""
    best, best_len = None, -1
    for layer, (_, members) in layers.items():
        for member in members:
            if (module == member or module.startswith(member + ".")) and \
                    len(member) > best_len:
                best, best_len = layer, len(member)
    return best


def _Reachable(layers: dict) -> dict[str, set[str]]:
    """Layer -> itself and every layer it builds on, directly or not."""
    result = {}
    for layer in layers:
        seen, todo = {layer}, [layer]
        while todo:
            for lower in layers[todo.pop()][0]:
                if lower not in seen:
                    seen.add(lower)
                    todo.append(lower)
        result[layer] = seen
    return result


def UpwardImports(graph: dict[str, set[str]],
                  layers: dict) -> list[tuple[str, str, str, str]]:
    """``(module, its layer, imported module, that layer)`` of every
    import the layers do not allow."""
    allowed = _Reachable(layers)
    result = []
    for module, targets in sorted(graph.items()):
        layer = LayerOf(module, layers)
        for target in sorted(targets):
            target_layer = LayerOf(target, layers)
            if target_layer not in allowed.get(layer, ()):
                result.append((module, layer, target, target_layer))
    return result


def Cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one
    module (Tarjan's algorithm, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    result.append(sorted(component))
    return sorted(result)


@pytest.fixture(scope="module")
def graph():
    return BuildGraph(_LIB)


def test_every_module_has_a_layer(graph):
    assert [module for module in sorted(graph)
            if LayerOf(module, LAYERS) is None] == []


def test_layers_build_on_declared_layers():
    for layer, (lower, members) in LAYERS.items():
        assert set(lower) <= set(LAYERS), layer
        assert members, layer
        # Building on a layer that builds on this one would be a cycle
        assert all(layer not in _Reachable(LAYERS)[below]
                   for below in lower), layer


def test_no_import_cycles(graph):
    assert Cycles(graph) == []


def test_no_upward_imports(graph):
    assert UpwardImports(graph, LAYERS) == []


def test_function_level_imports_are_seen(tmp_path):
    (tmp_path / "low.py").write_text("def f():\n"
                                     "    from ganeti import high\n")
    (tmp_path / "high.py").write_text("import ganeti.low\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import mod\n")
    (pkg / "mod.py").write_text("from ..low import f\n"
                                "from ganeti.pkg import mod as _self\n")
    assert BuildGraph(str(tmp_path)) == {
        "ganeti.low": {"ganeti.high"}, "ganeti.high": {"ganeti.low"},
        "ganeti.pkg": {"ganeti.pkg.mod"}, "ganeti.pkg.mod": {"ganeti.low"},
    }


def test_checker_catches_a_cycle_and_an_upward_edge():
    layers = {
        "base": ((), ("ganeti.a", "ganeti.b")),
        "middle": (("base", ), ("ganeti.m", )),
        "side": (("base", ), ("ganeti.s", )),
        "top": (("middle", "side"), ("ganeti.t", )),
    }
    graph = {
        "ganeti.a": {"ganeti.b"},
        "ganeti.b": set(),
        "ganeti.m": {"ganeti.a"},
        "ganeti.s": {"ganeti.b"},
        "ganeti.t": {"ganeti.m", "ganeti.s"},
    }
    assert Cycles(graph) == []
    assert UpwardImports(graph, layers) == []
    # A cycle within one layer (allowed by the layers, refused as a cycle)
    cyclic = dict(graph, **{"ganeti.b": {"ganeti.a"}})
    assert Cycles(cyclic) == [["ganeti.a", "ganeti.b"]]
    # A longer cycle through several layers, closed by a late import
    looped = dict(graph, **{"ganeti.b": {"ganeti.t"}})
    assert Cycles(looped) == [["ganeti.a", "ganeti.b", "ganeti.m",
                               "ganeti.s", "ganeti.t"]]
    # Upward, and sideways between layers that do not build on each other
    upward = dict(graph, **{"ganeti.a": {"ganeti.b", "ganeti.m"},
                            "ganeti.s": {"ganeti.m"}})
    assert UpwardImports(upward, layers) == [
        ("ganeti.a", "base", "ganeti.m", "middle"),
        ("ganeti.s", "side", "ganeti.m", "middle"),
    ]
    # A module no layer declares is reported too
    assert UpwardImports({"ganeti.t": {"ganeti.x"}}, layers) == [
        ("ganeti.t", "top", "ganeti.x", None)]


# Facade -> the modules whose names it re-exports: callers use the facade
# only (cli.ToStdout, objects.Instance, opcodes.OpNodeAdd)
FACADES = {
    "ganeti.cli": ("ganeti.cli_output", "ganeti.cli_format",
                   "ganeti.cli_jobs"),
    "ganeti.hypervisor.hv_kvm": ("ganeti.hypervisor.hv_kvm.monitor",
                                 "ganeti.hypervisor.hv_kvm.validation",
                                 "ganeti.hypervisor.hv_kvm.runtime",
                                 "ganeti.hypervisor.hv_kvm.processes",
                                 "ganeti.hypervisor.hv_kvm.migration"),
    "ganeti.objects": ("ganeti.objects.base", "ganeti.objects.cluster",
                       "ganeti.objects.configdata", "ganeti.objects.filters",
                       "ganeti.objects.instance", "ganeti.objects.network",
                       "ganeti.objects.oses"),
    "ganeti.opcodes": ("ganeti.opcodes_instance", "ganeti.opcodes_cluster",
                       "ganeti.opcodes_node", "ganeti.opcodes_group",
                       "ganeti.opcodes_network"),
}


def DefinedNames(path: str) -> list[str]:
    """The public names a module's file defines (not those it imports)."""
    with open(path, encoding="utf-8") as fobj:
        tree = ast.parse(fobj.read(), path)
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target]
            names.update(name.id for target in targets
                         for name in ast.walk(target)
                         if isinstance(name, ast.Name))
    return sorted(name for name in names if not name.startswith("_"))


@pytest.mark.parametrize("facade", sorted(FACADES))
def test_facade_exports_its_modules(facade):
    files = ModuleFiles(_LIB)
    outer = importlib.import_module(facade)
    for name in FACADES[facade]:
        module = importlib.import_module(name)
        defined = DefinedNames(files[name])
        assert defined, name
        assert [attr for attr in defined
                if getattr(outer, attr, None) is not getattr(module, attr)
                ] == [], name
