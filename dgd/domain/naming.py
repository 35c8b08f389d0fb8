"""Names of the objects the operator creates (domain spec §18)."""

from __future__ import annotations

#: Grove pod names are built from the PCS, scaling-group and clique names; this is their budget.
GROVE_POD_NAME_BUDGET = 45
_MIN_PCS_BUDGET = 8


def fnv32a(text: str) -> int:
    """The 32-bit FNV-1a hash of the UTF-8 bytes of ``text``."""
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def pcs_name(dgd_name: str, component_budget: int) -> str:
    """The PodCliqueSet name: the DGD name, shortened with a stable hash when it would not fit.

    ``component_budget`` is the longest component budget of the graph (see ``component_budget``).
    """
    budget = max(_MIN_PCS_BUDGET, GROVE_POD_NAME_BUDGET - component_budget)
    if len(dgd_name) <= budget:
        return dgd_name
    return f"{dgd_name[: budget - 5]}-{fnv32a(dgd_name) & 0xFFFF:04x}"


def component_budget(component_name: str, role_names: list[str]) -> int:
    """Characters a component adds to Grove pod names: its name, plus its longest role for PCSGs."""
    longest_role = max((len(role.lower()) for role in role_names), default=0)
    return len(component_name.lower()) + longest_role


def normalize(name: str) -> str:
    """A Kubernetes-safe form of a generated name: lowercase, dots become hyphens."""
    return name.lower().replace(".", "-")


def dynamo_namespace(namespace: str, dgd_name: str, *, global_namespace: bool) -> str:
    """The Dynamo runtime namespace of a component (domain spec §2.2)."""
    return "dynamo" if global_namespace else f"{namespace}-{dgd_name.replace('.', '-')}"


#: The longest object name or label value Kubernetes accepts for the names built below.
MAX_NAME = 63
_HASH_SUFFIX = 9  # "-" and 8 hex digits


def shorten(name: str, limit: int = MAX_NAME) -> str:
    """``name`` when it fits ``limit``, else a stable shortening: a prefix, ``-`` and 8 hex of FNV-1a.

    Upstream does not shorten these names (dgd-domain §21 item 9): an over-long name fails at the API
    server. Different inputs keep different results unless their FNV-1a hashes collide.
    """
    if len(name) <= limit:
        return name
    prefix = name[: limit - _HASH_SUFFIX].rstrip(".-")
    return f"{prefix}-{fnv32a(name):08x}"


def component_resource_name(dgd_name: str, component_name: str) -> str:
    """``<dgd>-<lowercase component>``: the Grove selector value and non-worker DCD name (≤ 63 chars)."""
    return shorten(f"{dgd_name}-{component_name.lower()}")


def worker_dcd_name(dgd_name: str, component_name: str, worker_hash: str) -> str:
    """``<dgd>-<lowercase component>-<worker hash>``, shortened before the hash so it stays visible."""
    full = f"{dgd_name}-{component_name.lower()}-{worker_hash}"
    if len(full) <= MAX_NAME:
        return full
    return f"{shorten(f'{dgd_name}-{component_name.lower()}', MAX_NAME - len(worker_hash) - 1)}-{worker_hash}"


def service_name(dgd_name: str, component_name: str) -> str:
    """The component Service (and Ingress) name: ``normalize(<dgd>-<component>)``, ≤ 63 chars."""
    return shorten(normalize(f"{dgd_name}-{component_name}"))
