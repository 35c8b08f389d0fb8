"""SyncResource (dgd-domain §7) as a decision: what to write so a child matches what the DGD wants.

``plan_sync(desired, live, owner)`` compares the rendered object with the one that exists (both as
JSON) and answers ``Create``, ``Patch`` or ``Keep``. Its rules are upstream's, with one departure
(``docs/decisions.md``):

* Create: the desired object with a controller owner reference to the DGD and the bookkeeping
  annotations ``nvidia.com/last-applied-hash`` (upstream's SHA-256 of the spec, ``gojson.last_applied``) and
  ``nvidia.com/last-applied-generation=1``.
* Update when the hash annotation is missing or differs, the generation annotation is missing or
  unparsable, or the live generation is newer than the one last applied (someone else edited it):
  only the bookkeeping annotations when the live spec already matches (fields the API server
  defaulted are not differences), otherwise the spec, as a merge patch from the live spec to the
  desired one, with generation annotation = live generation + 1.
* **Departure**: labels and annotations the operator renders are repaired when they drift (a merge
  patch of just those keys); keys it does not render are left alone. Upstream applies metadata only
  at create time.
* Keep: nothing to write; no event either.

A kind without ``spec`` (ConfigMap, ServiceAccount, RBAC) is compared on every top-level field but
``apiVersion``, ``kind``, ``metadata`` and ``status``. Every patch carries the live
resourceVersion, so a concurrent change is a conflict, never a lost update.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import msgspec

from dgd.domain.gojson.last_applied import last_applied_hash
from dgd.domain.pod_merge import JSON

LAST_APPLIED_HASH = "nvidia.com/last-applied-hash"
LAST_APPLIED_GENERATION = "nvidia.com/last-applied-generation"
_BOOKKEEPING = frozenset({LAST_APPLIED_HASH, LAST_APPLIED_GENERATION})
_ENVELOPE = frozenset({"apiVersion", "kind", "metadata", "status"})


class Create(msgspec.Struct, frozen=True):
    """Create ``body``."""

    body: JSON


class Patch(msgspec.Struct, frozen=True):
    """Merge-patch the live object (``patch`` carries its resourceVersion); ``spec`` when the spec changes,
    ``metadata`` naming the drifted metadata repaired (``labels``, ``annotations``)."""

    patch: JSON
    spec: bool
    metadata: tuple[str, ...] = ()


class Keep(msgspec.Struct, frozen=True):
    """The live object is as desired: write nothing."""


SyncPlan = Create | Patch | Keep


def body(obj: JSON) -> JSON:
    """What SyncResource owns of an object: its ``spec``, or every non-envelope field when it has none."""
    if "spec" in obj:
        return {"spec": obj["spec"]}
    return {key: value for key, value in obj.items() if key not in _ENVELOPE}


#: Hashes remembered, by a digest of the desired object (``content_hash``).
_HASHES: OrderedDict[bytes, str] = OrderedDict()
_REMEMBERED = 4096


def content_hash(obj: JSON) -> str:
    """The ``nvidia.com/last-applied-hash`` of ``obj``: upstream's own value where we know the kind's Go
    type (DCDs, Services, RBAC, ConfigMaps, Secrets...), so an adopted child needs no bookkeeping write.

    Writing an object as Go does takes 50-150 µs in Python; reconciles render the same children again
    and again, so the last few thousand hashes are remembered by a 16-byte digest of the object."""
    key = hashlib.blake2b(msgspec.json.encode(obj), digest_size=16).digest()
    digest = _HASHES.get(key)
    if digest is not None:
        _HASHES.move_to_end(key)
        return digest
    digest = _HASHES[key] = last_applied_hash(obj)
    if len(_HASHES) > _REMEMBERED:
        _HASHES.popitem(last=False)
    return digest


def covers(desired: Any, live: Any) -> bool:
    """Whether ``live`` has every value ``desired`` sets (API-server defaults are not differences).

    Maps compare key by key on the desired keys; lists element by element, same length; scalars by
    value. (Kubernetes' ``equality.Semantic.DeepDerivative``.)
    """
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return not desired
        return all(covers(value, live.get(key)) for key, value in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(desired) == len(live) and all(map(covers, desired, live))
    if desired is None:
        return True
    return bool(desired == live)


def _generation(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def is_stale(desired: JSON, live: JSON, digest: str | None = None) -> bool:
    """Whether ``live``'s body must be compared with ``desired``'s: the hash it was last written with
    differs, or someone else changed its spec since (its generation moved past the one recorded)."""
    live_meta: JSON = live.get("metadata") or {}
    live_annotations: dict[str, str] = live_meta.get("annotations") or {}
    applied = _generation(live_annotations.get(LAST_APPLIED_GENERATION))
    if live_annotations.get(LAST_APPLIED_HASH) != (digest or content_hash(desired)) or applied is None:
        return True
    return int(live_meta.get("generation") or 0) > applied


def plan_sync(desired: JSON, live: JSON | None, owner: JSON) -> SyncPlan:
    """What to write so the child named by ``desired`` matches it (``owner``: an ownerReference)."""
    digest = content_hash(desired)
    if live is None:
        created = msgspec.json.decode(msgspec.json.encode(desired))
        metadata = created.setdefault("metadata", {})
        metadata["ownerReferences"] = [owner]
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            LAST_APPLIED_HASH: digest,
            LAST_APPLIED_GENERATION: "1",
        }
        return Create(created)
    live_meta: JSON = live.get("metadata") or {}
    live_annotations: dict[str, str] = live_meta.get("annotations") or {}
    live_generation = int(live_meta.get("generation") or 0)
    stale = is_stale(desired, live, digest)
    patch: JSON = {}
    annotations: dict[str, Any] = {}
    spec_changed = False
    if stale:
        wanted, current = body(desired), body(live)
        if covers(wanted, current):
            generation = live_generation
        else:
            patch.update(_merge_patch(current, wanted))
            spec_changed = True
            generation = live_generation + 1
        annotations.update({LAST_APPLIED_HASH: digest, LAST_APPLIED_GENERATION: str(generation)})
    # Departure: metadata the operator renders converges too (its own keys only).
    desired_meta: JSON = desired.get("metadata") or {}
    drifted: list[str] = []
    labels = _drift(desired_meta.get("labels"), live_meta.get("labels"))
    if labels:
        drifted.append("labels")
    wanted_annotations = {
        k: v for k, v in (desired_meta.get("annotations") or {}).items() if k not in _BOOKKEEPING
    }
    annotation_drift = _drift(wanted_annotations, live_annotations)
    if annotation_drift:
        drifted.append("annotations")
    annotations = {**annotation_drift, **annotations}
    meta_patch: JSON = {}
    if labels:
        meta_patch["labels"] = labels
    if annotations:
        meta_patch["annotations"] = annotations
    if not meta_patch and not patch:
        return Keep()
    meta_patch["resourceVersion"] = live_meta.get("resourceVersion")
    patch["metadata"] = meta_patch
    return Patch(patch, spec_changed, tuple(drifted))


def _drift(wanted: dict[str, str] | None, live: dict[str, str] | None) -> dict[str, str]:
    live = live or {}
    return {key: value for key, value in (wanted or {}).items() if live.get(key) != value}


def _merge_patch(live: Any, desired: Any) -> Any:
    """The RFC 7386 merge patch from ``live`` to ``desired`` (``null`` removes; lists replace whole)."""
    if not isinstance(live, dict) or not isinstance(desired, dict):
        return desired
    out: JSON = {key: None for key in live.keys() - desired.keys()}
    for key, value in desired.items():
        if key not in live:
            out[key] = value
        elif live[key] != value:
            out[key] = _merge_patch(live[key], value)
    return dict(sorted(out.items()))
