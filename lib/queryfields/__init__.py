"""Which query resource has which field table: the one registry.

The query LUs (cmdlib.query), masterd's LUXI job queries, the RAPI
resources and the OpenAPI document all read a resource's fields here.
The tables live in the modules of this package; each is ``name ->
(title, kind, getter, doc)``.
"""

from ganeti import constants, errors, query
from ganeti.queryfields.exports import EXPORT_FIELDS
from ganeti.queryfields.filters import FILTER_FIELDS
from ganeti.queryfields.groups import GROUP_FIELDS
from ganeti.queryfields.instances import INSTANCE_FIELDS
from ganeti.queryfields.jobs import JOB_FIELDS
from ganeti.queryfields.networks import NETWORK_FIELDS
from ganeti.queryfields.nodes import NODE_FIELDS
from ganeti.queryfields.oses import OS_FIELDS

FIELDS: dict[str, query.FieldTable] = {
    constants.QR_NODE: NODE_FIELDS,
    constants.QR_GROUP: GROUP_FIELDS,
    constants.QR_INSTANCE: INSTANCE_FIELDS,
    constants.QR_OS: OS_FIELDS,
    constants.QR_EXPORT: EXPORT_FIELDS,
    constants.QR_JOB: JOB_FIELDS,
    constants.QR_FILTER: FILTER_FIELDS,
    constants.QR_NETWORK: NETWORK_FIELDS,
}


def GetFields(what: str) -> query.FieldTable:
    """The field table of a resource; OpPrereqError if there is none."""
    try:
        return FIELDS[what]
    except (KeyError, TypeError):
        raise errors.OpPrereqError("Resource type '%s' unknown" % what,
                                   errors.ECODE_INVAL) from None
