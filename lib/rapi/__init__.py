"""Ganeti remote API (RAPI): the HTTPS/JSON server and its client."""

# User options in the RAPI users file granting access to resources
RAPI_ACCESS_WRITE = "write"
RAPI_ACCESS_READ = "read"
RAPI_ACCESS_ALL = frozenset([RAPI_ACCESS_WRITE, RAPI_ACCESS_READ])
