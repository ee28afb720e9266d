"""The htools' node and instance tables (``-p``/``--print-nodes``,
``--print-instances``).

Ganeti's ``Node.showField``/``showHeader`` and ``Cluster.printNodes``/
``printInsts``: the same fields, titles and printf formats; every column
padded to its widest cell (numeric ones to the right, the last one too),
each line led by a space. The rows are in the order of Ganeti's node and
instance indices: its LUXI loader's, by name (``NiceSort``). Nodes are
shown by their name without the
domain all node and instance names share (Ganeti's alias), instances and
their nodes by the full names.

The values come from our model. Placements leave two of Ganeti's node
figures alone, which our model does not keep: the free memory the node
reported (``f_mem``; the model's ``f_mem`` is Ganeti's unallocated
``u_mem``) and, on the nodes no placement touched, the N+1 flag computed
from it at load. Both are read from the freshly loaded cluster.
"""

import decimal
import math
from collections.abc import Callable, Iterable

from ganeti import utils
from ganeti.htools.model import Cluster, Node

# Ganeti's value and title of a field it does not know
UNKNOWN_FIELD = "<unknown field>"

DEFAULT_NODE_FIELDS = (
    "status", "name", "tmem", "nmem", "imem", "xmem", "fmem", "umem",
    "rmem", "tdsk", "fdsk", "tcpu", "ucpu", "pcnt", "scnt", "pfmem",
    "pfdsk", "rcpu", "cload", "mload", "dload", "nload")

_INSTANCE_HEADER = ("F", "Name", "Pri_node", "Sec_node", "Auto_bal", "vcpu",
                    "mem", "dsk", "lCpu", "lMem", "lDsk", "lNet")


# Room for the digits of any float in FormatFloat
_DIGITS = decimal.Context(prec=800)


def FormatFloat(fmt: str, value: float) -> str:
    """printf ``"%<width>.<precision>f"`` of a float as the htools
    (Haskell) write it: the shortest decimal digits of the value rounded
    half to even (0.00125 gives 0.0012 at four places), NaN and infinity
    spelt out."""
    width, _, places = fmt[1:-1].partition(".")
    if math.isfinite(value):
        exact = decimal.Decimal(repr(float(value)))
        # "f": a zero quantized to places is "0E-8" in str()
        text = format(exact.quantize(decimal.Decimal(1).scaleb(
            -int(places or 6)), decimal.ROUND_HALF_EVEN, _DIGITS), "f")
    else:
        text = "NaN" if math.isnan(value) else \
            ("Infinity" if value > 0 else "-Infinity")
    return text.rjust(int(width or 0))


def FormatGeneric(value: float, places: int = 6) -> str:
    """printf ``"%.<places>g"`` as the htools (Haskell) write it: fixed
    notation with ``places`` decimals from 0.1 to 10^7 (and for 0), else
    d.ddd...e<exponent> with as many (8.203125e-3), rounded as
    ``FormatFloat`` rounds."""
    if not math.isfinite(value) or value == 0 or \
            0.1 <= abs(value) < 1e7:
        return FormatFloat("%%.%df" % places, value)
    exact = decimal.Decimal(repr(float(value)))
    exponent = exact.adjusted()
    quantum = decimal.Decimal(1).scaleb(-places)
    mantissa = exact.scaleb(-exponent).quantize(
        quantum, decimal.ROUND_HALF_EVEN, _DIGITS)
    if abs(mantissa) >= 10:
        exponent += 1
        mantissa = exact.scaleb(-exponent).quantize(
            quantum, decimal.ROUND_HALF_EVEN, _DIGITS)
    return "%se%d" % (format(mantissa, "f"), exponent)


def Ratio(num: float, den: float) -> float:
    """``num / den`` as a Haskell Double: infinite or NaN for 0 (the
    htools' fractions and hspace's efficiencies)."""
    if den:
        return num / den
    return math.nan if not num else math.copysign(math.inf, num)


def ShowDouble(value: float) -> str:
    """A float as Haskell's ``show`` writes it (hspace's KM_*_NPU): the
    shortest digits, in fixed notation from 0.1 to 10^7, else as
    d.ddde<exponent>."""
    if value == 0:
        return "0.0"
    sign, digits, exponent = decimal.Decimal(repr(float(value))).as_tuple()
    text = "".join(str(digit) for digit in digits).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digits) + exponent  # digits before the decimal point
    minus = "-" if sign else ""
    if 0 < point <= 7:
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return "%s%s.%s" % (minus, whole, frac or "0")
    if point == 0:
        return "%s0.%s" % (minus, text)
    return "%s%s.%se%d" % (minus, text[0], text[1:] or "0", point - 1)


def NodeFields(spec: str | None) -> list[str]:
    """The fields of ``-p[FIELDS]``: the default ones without FIELDS,
    more of them after a leading "+", else those listed."""
    if not spec:
        return list(DEFAULT_NODE_FIELDS)
    if spec.startswith("+"):
        return list(DEFAULT_NODE_FIELDS) + spec[1:].split(",")
    return spec.split(",")


def CommonSuffix(names: Iterable[str]) -> str:
    """The longest ".domain" every name ends with ("" if none), which the
    htools leave out of the node names they show (``longestDomain``)."""
    names = list(names)
    if not names:
        return ""
    first = names[0]
    for pos, char in enumerate(first):
        if char == "." and all(name.endswith(first[pos:])
                               for name in names[1:]):
            return first[pos:]
    return ""


def Aliases(cluster: Cluster) -> Callable[[str], str]:
    """Names as the htools show them (Ganeti's aliases): without the
    domain all the cluster's nodes and instances share."""
    suffix = CommonSuffix(list(cluster.nodes) + list(cluster.instances))

    def alias(name: str) -> str:
        return name[:-len(suffix)] if suffix and name.endswith(suffix) \
            else name

    return alias


class _NodeView:
    """What a node's fields are computed from."""

    def __init__(self, cluster: Cluster, initial: Cluster) -> None:
        # Ganeti's node index
        self.index = {name: idx for idx, name in
                      enumerate(utils.NiceSort(cluster.nodes))}
        self.alias = Aliases(initial)
        # name -> (reported free memory, N+1 flag, instance lists) at load
        self.loaded = {
            name: (node.f_mem - min(node.x_mem, 0.0),
                   node.f_mem - min(node.x_mem, 0.0) < node.r_mem,
                   (set(node.plist), set(node.slist)))
            for name, node in initial.nodes.items()}

    def Alias(self, node: Node) -> str:
        return self.alias(node.name)

    def Status(self, node: Node) -> str:
        if node.offline:
            return "-"
        loaded = self.loaded.get(node.name)
        if loaded is not None and loaded[2] == (node.plist, node.slist):
            # untouched: Ganeti's flag from the reported free memory
            fail_n1 = loaded[1]
        else:
            fail_n1 = node.fail_n1
        return "*" if fail_n1 else " "

    def Reported(self, node: Node) -> float:
        loaded = self.loaded.get(node.name)
        return loaded[0] if loaded is not None else node.f_mem


def _IMem(node: Node) -> float:
    """Memory of the running primaries (``iMem``), from what the model
    accounts (as capacity.ClusterStats)."""
    return node.t_mem - node.n_mem - max(node.x_mem, 0.0) - node.f_mem


def _PDsk(node: Node) -> float:
    """Free disk fraction (``pDsk``): of the spindles with exclusive
    storage; a node without local storage has all free."""
    if node.excl:
        return node.f_sp / node.t_sp if node.t_sp else 1.0
    return node.f_dsk / node.t_dsk if node.t_dsk else 1.0


def _Load(index: int) -> Callable[[Node, _NodeView], str]:
    return lambda node, _: FormatFloat("%5.3f", node.load[index]
                                       if node.load else 0.0)


_NodeField = tuple[str, bool, Callable[[Node, _NodeView], str]]

# field -> (title, numeric, value)
_NODE_FIELDS: dict[str, _NodeField] = {
    "idx": ("Index", True, lambda node, view: "%4d" % view.index[node.name]),
    "name": ("Name", False, lambda node, view: view.Alias(node)),
    "fqdn": ("Name", False, lambda node, _: node.name),
    "status": ("F", False, lambda node, view: view.Status(node)),
    "tmem": ("t_mem", True, lambda node, _: FormatFloat("%5.0f",
                                                        node.t_mem)),
    "nmem": ("n_mem", True, lambda node, _: "%5d" % node.n_mem),
    "xmem": ("x_mem", True, lambda node, _: "%5d" % node.x_mem),
    "fmem": ("f_mem", True, lambda node, view: "%5d" % view.Reported(node)),
    "umem": ("u_mem", True, lambda node, _: "%5d" % node.f_mem),
    "imem": ("i_mem", True, lambda node, _: "%5d" % _IMem(node)),
    "rmem": ("r_mem", True, lambda node, _: "%5d" % node.r_mem),
    "amem": ("a_mem", True,
             lambda node, _: "%5d" % max(node.f_mem - node.r_mem, 0.0)),
    "tdsk": ("t_dsk", True, lambda node, _: FormatFloat(
        "%5.0f", node.t_dsk / 1024)),
    "fdsk": ("f_dsk", True, lambda node, _: "%5d" % (node.f_dsk // 1024)),
    "tcpu": ("pcpu", True, lambda node, _: FormatFloat("%4.0f", node.t_cpu)),
    "ucpu": ("vcpu", True, lambda node, _: "%4d" % node.u_cpu),
    "pcnt": ("pcnt", True, lambda node, _: "%3d" % len(node.plist)),
    "scnt": ("scnt", True, lambda node, _: "%3d" % len(node.slist)),
    "pfmem": ("p_fmem", True, lambda node, _: FormatFloat(
        "%6.4f", Ratio(node.f_mem, node.t_mem))),
    "pfdsk": ("p_fdsk", True, lambda node, _: FormatFloat("%6.4f",
                                                          _PDsk(node))),
    "rcpu": ("r_cpu", True, lambda node, _: FormatFloat(
        "%5.2f", Ratio(node.u_cpu, node.t_cpu))),
    "cload": ("lCpu", True, _Load(0)),
    "mload": ("lMem", True, _Load(1)),
    "dload": ("lDsk", True, _Load(2)),
    "nload": ("lNet", True, _Load(3)),
    "ptags": ("PrimaryTags", False, lambda node, _: ",".join(
        "%s=%d" % item for item in sorted(node.xtags.items()))),
    "spindle_count": ("NodeSpindles", True,
                      lambda node, _: "%d" % node.spindles),
}


def FormatTable(header: list[str], rows: list[list[str]],
                numeric: list[bool]) -> list[str]:
    """The htools' table (``printTable``): columns padded to their
    widest cell, to the right if numeric, each line led by a space."""
    lines = [header] + rows
    widths = [max(len(line[idx]) for line in lines)
              for idx in range(len(header))]
    return [" " + " ".join(cell.rjust(width) if num else cell.ljust(width)
                           for cell, width, num in zip(line, widths, numeric))
            for line in lines]


def NodeTable(cluster: Cluster, fields: list[str],
              initial: Cluster | None = None,
              names: Iterable[str] | None = None) -> list[str]:
    """The node list (``Cluster.printNodes``) of ``cluster``, the state
    the placements made of ``initial`` (default: ``cluster`` itself,
    freshly loaded): the nodes ``names`` (default: all)."""
    view = _NodeView(cluster, initial or cluster)
    wanted = cluster.nodes if names is None else set(names)
    unknown: _NodeField = (UNKNOWN_FIELD, False,
                           lambda node, view: UNKNOWN_FIELD)
    specs = [_NODE_FIELDS.get(field, unknown) for field in fields]
    rows = [[fn(cluster.nodes[name], view) for _, _, fn in specs]
            for name in utils.NiceSort(cluster.nodes) if name in wanted]
    return FormatTable([title for title, _, _ in specs], rows,
                       [num for _, num, _ in specs])


def InstanceTable(cluster: Cluster,
                  nodes: Iterable[str] | None = None) -> list[str]:
    """The instance map (``Cluster.printInsts``): the instances whose
    primary is one of ``nodes`` (default: all). Auto-balance is shown as
    set: the allocator input does not carry it (hail's loader assumes it
    too)."""
    wanted = cluster.nodes if nodes is None else set(nodes)
    rows = []
    for name in utils.NiceSort(cluster.instances):
        inst = cluster.instances[name]
        if inst.pnode not in wanted:
            continue
        rows.append(["R" if inst.runs else " ", name, inst.pnode or "",
                     inst.snode or "", "Y", "%3d" % inst.vcpus,
                     "%5d" % inst.mem, "%5d" % (inst.dsk // 1024)] +
                    [FormatFloat("%5.3f", value) for value in inst.util[:4]])
    return FormatTable(list(_INSTANCE_HEADER), rows,
                       [False] * 5 + [True] * 7)
