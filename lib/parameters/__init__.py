"""The parameter layer, below the configuration objects.

``base``: how a family is declared (ParamSpec, ParamTable), checked,
converted from text (with units and legacy names) and merged;
``families``: the backend, NIC, node, disk and instance policy families;
``hypervisors``: each hypervisor's parameters and defaults.
"""
