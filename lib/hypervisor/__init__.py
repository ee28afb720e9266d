"""The hypervisors Ganeti can drive, by name.

GetHypervisorClass gives the class (parameter table, syntax checks: what
the master needs); GetHypervisor an instance, for the node side.
"""

from ganeti import constants, errors
from ganeti.hypervisor import hv_base, hv_fake, hv_kvm

_HYPERVISOR_MAP: dict[str, type[hv_base.BaseHypervisor]] = {
    constants.HT_FAKE: hv_fake.FakeHypervisor,
    constants.HT_KVM: hv_kvm.KVMHypervisor,
}


def GetHypervisorClass(ht_kind: str) -> type[hv_base.BaseHypervisor]:
    """The class implementing a hypervisor; HypervisorError if unknown."""
    try:
        return _HYPERVISOR_MAP[ht_kind]
    except (KeyError, TypeError):
        raise errors.HypervisorError(
            "Unknown hypervisor %r (known: %s)" %
            (ht_kind, ", ".join(sorted(_HYPERVISOR_MAP)))) from None


def GetHypervisor(ht_kind: str) -> hv_base.BaseHypervisor:
    """A hypervisor object, for use on the node running the instances."""
    return GetHypervisorClass(ht_kind)()


def GetHypervisorNames() -> list[str]:
    """Hypervisors this version implements."""
    return sorted(_HYPERVISOR_MAP)


def GetHvDefaults(ht_kind: str) -> dict:
    """Built-in parameter defaults of a hypervisor."""
    return GetHypervisorClass(ht_kind).GetDefaults()
