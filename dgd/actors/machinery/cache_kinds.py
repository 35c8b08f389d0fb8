"""What the informer cache keeps of an object of each kind it watches, and what it indexes it by.

``SLIM``: the kinds the operator reads only in part are kept without the rest (a PodClique's pod
spec, Grove's copy of its template; a PodCliqueSet's pod specs; the bodies of the Services, Ingresses,
ConfigMaps, ServiceAccounts and Roles the operator writes, of which reconciles read only the
metadata; a RoleBinding's ``roleRef`` and ``subjects`` with its metadata; a pod's metadata and phase),
so a cache of thousands of objects does not hold them: the syncer reads an object whole when its
bookkeeping says it must be compared (``Syncer.sync``).

``REFERENCES``: besides its controller (every kind), an object of these kinds is indexed by the object
of its namespace it refers to (``Cache.referring``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from dgd.cluster.resources import (
    CONFIG_MAP,
    DGDSA,
    INGRESS,
    PCLQ,
    PCS,
    POD,
    ROLE,
    ROLE_BINDING,
    SERVICE,
    SERVICE_ACCOUNT,
)
from dgd.messages.dgdsa import DGDSASpec
from dgd.messages.grove import PodCliqueSet
from dgd.messages.grove_children import PodClique


def _without_pod_spec(clique: PodClique) -> PodClique:
    """A PodClique as the operator reads it: its status, replicas and metadata. Grove writes its pod
    spec (the clique's whole template) and nothing here reads it: a cache of thousands keeps none."""
    if not isinstance(clique, PodClique) or clique.spec is None or not clique.spec.pod_spec:
        return clique
    return msgspec.structs.replace(clique, spec=msgspec.structs.replace(clique.spec, pod_spec={}))


def _without_pod_specs(pcs: PodCliqueSet) -> PodCliqueSet:
    """A PodCliqueSet as reconciles read it: metadata, status, every clique's name, labels, annotations
    and replicas, its scaling groups. Its cliques' pod specs (most of its bytes) are read whole by the
    syncer only when the set must be compared with what is rendered (``Syncer.sync``)."""
    template = pcs.spec.template if isinstance(pcs, PodCliqueSet) and pcs.spec is not None else None
    if template is None or not any(c.spec.pod_spec for c in template.cliques):
        return pcs
    cliques = [
        msgspec.structs.replace(c, spec=msgspec.structs.replace(c.spec, pod_spec={}))
        for c in template.cliques
    ]
    spec = msgspec.structs.replace(pcs.spec, template=msgspec.structs.replace(template, cliques=cliques))
    return msgspec.structs.replace(pcs, spec=spec)


_ENVELOPE = frozenset({"apiVersion", "kind", "metadata"})


def _envelope(obj: Any) -> Any:
    """A raw object as reconciles read it: kind and metadata (the syncer compares a body only after
    reading the object whole, and only the metadata of these kinds is read otherwise)."""
    if not isinstance(obj, dict) or obj.keys() <= _ENVELOPE:
        return obj
    return {key: value for key, value in obj.items() if key in _ENVELOPE}


_BINDING = _ENVELOPE | {"roleRef", "subjects"}


def _binding(obj: Any) -> Any:
    """A RoleBinding as reconciles read it: its envelope, role and subjects (compared as they are)."""
    if not isinstance(obj, dict) or obj.keys() <= _BINDING:
        return obj
    return {key: value for key, value in obj.items() if key in _BINDING}


def _pod_phase(obj: Any) -> Any:
    """A pod as the operator reads it: its envelope and its phase (whether it ended). Its spec and the
    rest of its status are most of its bytes, and the cache holds a worker pod of every DGD."""
    if not isinstance(obj, dict):
        return obj
    phase = (obj.get("status") or {}).get("phase")
    slim = {key: value for key, value in obj.items() if key in _ENVELOPE}
    if phase is not None:
        slim["status"] = {"phase": phase}
    return slim


#: What the operator's cache keeps of the kinds it reads only in part, by resource id.
SLIM: Mapping[str, Callable[[Any], Any]] = {
    str(PCLQ): _without_pod_spec,
    str(PCS): _without_pod_specs,
    **{str(kind): _envelope for kind in (SERVICE, INGRESS, CONFIG_MAP, SERVICE_ACCOUNT, ROLE)},
    str(ROLE_BINDING): _binding,
    str(POD): _pod_phase,
}


def _scaled_graph(adapter: Any) -> str | None:
    """The DGD a scaling adapter scales (``spec.dgdRef.name``, in the adapter's namespace)."""
    spec = getattr(adapter, "spec", None)
    return spec.dgd_ref.name if isinstance(spec, DGDSASpec) else None


#: What the cache indexes objects of a kind by besides their controller, by resource id: the name of
#: the object (in the same namespace) they refer to (``referring``). A scaling adapter refers to the
#: DGD it scales, and a DGD's change reaches its adapters through this index, not by a scan of every
#: adapter of the namespace.
REFERENCES: Mapping[str, Callable[[Any], str | None]] = {str(DGDSA): _scaled_graph}
