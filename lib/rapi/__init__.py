"""Ganeti remote API (RAPI): the HTTPS/JSON server and its client."""

# User options in the RAPI users file granting access to resources
RAPI_ACCESS_WRITE = "write"
RAPI_ACCESS_READ = "read"
RAPI_ACCESS_ALL = frozenset([RAPI_ACCESS_WRITE, RAPI_ACCESS_READ])

# Optional features a server announces at /2/features (clients check them
# before sending the newer request formats)
INST_CREATE_REQV1 = "instance-create-reqv1"
INST_REINSTALL_REQV1 = "instance-reinstall-reqv1"
NODE_MIGRATE_REQV1 = "node-migrate-reqv1"
NODE_EVAC_RES1 = "node-evac-res1"
