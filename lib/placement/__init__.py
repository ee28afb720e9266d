"""The Placement service: resource providers, aggregates and allocations.

A reimplementation of OpenStack Placement's model and request semantics,
as pure computation on an in-memory state (``model``); the RAPI daemon
serves it under ``/placement/`` and persists the state. Where Placement's
behaviour depends on the microversion, the functions here take it as a
``(major, minor)`` tuple; refusals are ``errors.PlacementError`` with
Placement's status, message and error code.
"""

# Error codes of Placement's JSON error bodies (from microversion 1.23)
ERR_UNDEFINED = "placement.undefined_code"
ERR_CONCURRENT_UPDATE = "placement.concurrent_update"
ERR_DUPLICATE_NAME = "placement.duplicate_name"
ERR_INVENTORY_INUSE = "placement.inventory.inuse"
ERR_PROVIDER_IN_USE = "placement.resource_provider.inuse"
ERR_PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"
ERR_PROVIDER_CANNOT_DELETE_PARENT = \
    "placement.resource_provider.cannot_delete_parent"
ERR_QUERY_MISSING_VALUE = "placement.query.missing_value"
ERR_QUERY_BAD_VALUE = "placement.query.bad_value"
ERR_QUERY_DUPLICATE_KEY = "placement.query.duplicate_key"

# The trait marking a provider whose inventory serves every tree it shares
# an aggregate with
TRAIT_SHARES_VIA_AGGREGATE = "MISC_SHARES_VIA_AGGREGATE"
