"""RAPI resources of networks: /2/networks and below (Ganeti 3.0's)."""

from ganeti import constants, opcodes
from ganeti.rapi import openapi
from ganeti.rapi.baserlib import OpcodeResource
from ganeti.rapi.rlib2 import COMMON_FIELDS, TagsResource

NET_FIELDS = ["name", "network", "gateway", "network6", "gateway6",
              "mac_prefix", "free_count", "reserved_count", "map",
              "group_list", "inst_list", "external_reservations",
              ] + COMMON_FIELDS


class R_2_networks(OpcodeResource):
    """/2/networks resource."""

    GET_ARGS = ("bulk", )
    GET_RESULT = openapi.ItemList(constants.QR_NETWORK, NET_FIELDS,
                                  ("name", "uri"))
    POST_OPCODE = opcodes.OpNetworkAdd
    POST_RENAME = {"name": "network_name"}
    POST_QUERY = {"dry-run": "dry_run"}

    def GET(self) -> list[dict]:
        """Returns the networks: names and URIs, or their details."""
        return self.ListItems(constants.QR_NETWORK, NET_FIELDS,
                              "/2/networks/%s")


class R_2_networks_name(OpcodeResource):
    """/2/networks/[network_name] resource."""

    URI_PARAMS = ("network_name", )
    GET_RESULT = openapi.Item(constants.QR_NETWORK, NET_FIELDS)
    DELETE_OPCODE = opcodes.OpNetworkRemove
    DELETE_QUERY = {"dry-run": "dry_run"}
    DELETE_BODY = False

    def GET(self) -> dict:
        """Returns a network's details."""
        return self.GetItem(constants.QR_NETWORK, NET_FIELDS, self.items[0])


class R_2_networks_name_modify(OpcodeResource):
    """/2/networks/[network_name]/modify resource."""

    URI_PARAMS = ("network_name", )
    PUT_OPCODE = opcodes.OpNetworkSetParams


class R_2_networks_name_connect(OpcodeResource):
    """/2/networks/[network_name]/connect resource."""

    URI_PARAMS = ("network_name", )
    PUT_OPCODE = opcodes.OpNetworkConnect
    PUT_QUERY = {"dry-run": "dry_run"}


class R_2_networks_name_disconnect(OpcodeResource):
    """/2/networks/[network_name]/disconnect resource."""

    URI_PARAMS = ("network_name", )
    PUT_OPCODE = opcodes.OpNetworkDisconnect
    PUT_QUERY = {"dry-run": "dry_run"}


class R_2_networks_name_tags(TagsResource):
    """/2/networks/[network_name]/tags resource."""

    TAG_LEVEL = constants.TAG_NETWORK
