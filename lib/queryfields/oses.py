"""Query fields of the ``os`` resource: an OS as all nodes see it."""

from typing import Any, Callable

from ganeti import constants, query

# Indexes in a node_status entry: the os_diagnose answer without the name,
# [path, valid, reason, variants, parameters, api_versions, trusted]
_NS_STATUS = 1
_NS_VARIANTS = 3
_NS_PARAMS = 4
_NS_API = 5
_NS_TRUSTED = 6


class OsInfo:
    """One OS as seen by the whole cluster (a row of the os query)."""

    __slots__ = ("name", "valid", "hidden", "blacklisted", "variants",
                 "api_versions", "parameters", "node_status", "os_hvp",
                 "osparams", "trusted")

    def __init__(self, name: str, node_status: dict[str, list],
                 cluster: Any):
        self.name = name
        self.node_status = node_status
        self.hidden = name in (cluster.hidden_os or [])
        self.blacklisted = name in (cluster.blacklisted_os or [])
        self.os_hvp = dict((cluster.os_hvp or {}).get(name, {}))
        self.osparams = dict((cluster.osparams or {}).get(name, {}))
        self.valid = True
        self.trusted = True
        variants: set[str] | None = None
        params: set[tuple[str, str]] | None = None
        api: set[int] | None = None
        for entries in node_status.values():
            if not entries or not entries[0][_NS_STATUS]:
                self.valid = False
                break
            first = entries[0]
            node_params = {tuple(pair) for pair in first[_NS_PARAMS]}
            if variants is None or params is None or api is None:
                variants = set(first[_NS_VARIANTS])
                params = node_params
                api = set(first[_NS_API])
            else:
                variants &= set(first[_NS_VARIANTS])
                params &= node_params
                api &= set(first[_NS_API])
            self.trusted = self.trusted and bool(first[_NS_TRUSTED])
        if not self.valid:
            variants, params, api = set(), set(), set()
        self.variants = sorted(variants or [])
        self.parameters = [list(pair) for pair in sorted(params or [])]
        self.api_versions = sorted(api or [])


def _BuildOsFields() -> query.FieldTable:
    def attr(name: str) -> Callable[[OsInfo], Any]:
        return lambda info: getattr(info, name)

    return {
        "name": ("Name", constants.QFT_TEXT, attr("name"),
                 "Operating system name"),
        "valid": ("Valid", constants.QFT_BOOL, attr("valid"),
                  "Whether operating system definition is valid"),
        "hidden": ("Hidden", constants.QFT_BOOL, attr("hidden"),
                   "Whether operating system is hidden"),
        "blacklisted": ("Blacklisted", constants.QFT_BOOL,
                        attr("blacklisted"),
                        "Whether operating system is blacklisted"),
        "variants": ("Variants", constants.QFT_OTHER, attr("variants"),
                     "Operating system variants"),
        "api_versions": ("ApiVersions", constants.QFT_OTHER,
                         attr("api_versions"),
                         "Operating system API versions"),
        "parameters": ("Parameters", constants.QFT_OTHER,
                       attr("parameters"),
                       "Operating system parameters"),
        "node_status": ("NodeStatus", constants.QFT_OTHER,
                        attr("node_status"),
                        "Status from node, one [path, valid, reason,"
                        " variants, parameters, api_versions, trusted]"
                        " entry per directory the OS was found in"),
        "os_hvp": ("OsHypervisorParams", constants.QFT_OTHER, attr("os_hvp"),
                   "Operating system specific hypervisor parameters"),
        "osparams": ("OsParameters", constants.QFT_OTHER, attr("osparams"),
                     "Operating system specific parameters"),
        "trusted": ("Trusted", constants.QFT_BOOL, attr("trusted"),
                    "Whether this OS is trusted"),
    }


OS_FIELDS = _BuildOsFields()
