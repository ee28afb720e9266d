"""Query fields of the ``export`` resource: (node name, export name) rows.
"""

from ganeti import constants, query

EXPORT_FIELDS: query.FieldTable = {
    "node": ("Node", constants.QFT_TEXT, lambda row: row[0], "Node name"),
    "export": ("Export", constants.QFT_TEXT, lambda row: row[1],
               "Export name"),
}
