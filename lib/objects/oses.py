"""OS definitions as found on the nodes (never stored in the configuration).
"""

# Field annotations stay strings: ConfigObject reads them, never evaluates
from __future__ import annotations

from ganeti import constants, errors, ht
from ganeti.objects.base import ConfigObject, _TStringList


class OS(ConfigObject):
    """An OS definition found on a node (never stored in the config).

    ``path`` is the OS directory, the ``*_script`` fields the full paths
    of its scripts (``create_script_untrusted`` None when the OS has
    none); ``supported_parameters`` lists ``[name, description]`` pairs.
    """

    name: str
    path: str
    api_versions: list[int]
    create_script: str
    create_script_untrusted: str | None
    export_script: str
    import_script: str
    rename_script: str
    verify_script: str | None
    supported_variants: list[str]
    supported_parameters: list[list[str]]
    _FIELD_CHECKS = {
        "name": ht.TNonEmptyString,
        "path": ht.TNonEmptyString,
        "api_versions": ht.TListOf(ht.TNonNegativeInt),
        "supported_variants": _TStringList,
        "supported_parameters": ht.TListOf(ht.TListOf(ht.TString)),
    }
    _FIELD_DEFAULTS = {"api_versions": [], "supported_variants": [],
                       "supported_parameters": []}
    _REQUIRED = frozenset(["name", "path"])

    @staticmethod
    def SplitNameVariant(name: str) -> list[str]:
        """``[os_name, variant]`` of ``name+variant`` (variant "" if none)."""
        parts = name.split(constants.OS_VARIANT_DELIM, 1)
        if len(parts) < 2:
            parts.append("")
        return parts

    @staticmethod
    def NamesWithVariants(os_name: str,
                          os_variants: list[str] | None) -> list[str]:
        """The names an OS is used by: ``name+variant`` for each variant
        (the name alone if it has none)."""
        if os_variants:
            return ["%s%s%s" % (os_name, constants.OS_VARIANT_DELIM, variant)
                    for variant in os_variants]
        return [os_name]

    @classmethod
    def GetName(cls, name: str) -> str:
        """The OS name without its variant."""
        return cls.SplitNameVariant(name)[0]

    @classmethod
    def GetVariant(cls, name: str) -> str:
        """The variant part of an OS name ("" if none)."""
        return cls.SplitNameVariant(name)[1]

    def CheckVariant(self, name: str) -> None:
        """Refuse ``name`` (``os+variant``) unless its variant suits the OS.

        An OS with variants needs one of them named; one without refuses
        any variant.
        """
        variant = self.GetVariant(name)
        if not self.supported_variants:
            if variant:
                raise errors.OpPrereqError(
                    "OS '%s' doesn't support variants ('%s' passed)" %
                    (self.name, variant), errors.ECODE_INVAL)
            return
        if not variant:
            raise errors.OpPrereqError("OS name '%s' must include a variant"
                                       % name, errors.ECODE_INVAL)
        if variant not in self.supported_variants:
            raise errors.OpPrereqError("OS '%s' doesn't support variant '%s'"
                                       % (self.name, variant),
                                       errors.ECODE_INVAL)

    @property
    def is_trusted(self) -> bool:
        """Whether the OS may run its create script on the node itself.

        Only OSes shipping a ``create_untrusted`` script need the install
        helper VM; Ganeti calls the others trusted.
        """
        return not self.create_script_untrusted
