"""The memory API server's verbs, with Kubernetes semantics, as synchronous calls on JSON.

Each call is atomic: it reads, checks preconditions, applies the verb's strategy, validates, writes
through the store, then lets the garbage collector settle, all without yielding. ``adapter.py``
wraps these calls in the async port (faults, latency, Struct encoding).

Rules enforced here: ``AlreadyExists`` on a taken name; ``NotFound`` for a missing object or a
subresource the kind does not have; ``Conflict`` on a stale resourceVersion or a failed delete
precondition; a write that changes nothing is a no-op (same resourceVersion, no watch event);
delete with finalizers only marks the object (deletionTimestamp), and an update that removes the
last finalizer of such an object deletes it. The checks a request must pass first, and the errors
they answer with, are in :mod:`~dgd.cluster.memory.preconditions`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from typing import Any, Literal

from dgd.cluster import merge_patch
from dgd.cluster.admission import Admission, AdmissionAttempt
from dgd.cluster.errors import AlreadyExists, Cause, Invalid, NotFound, ServerError
from dgd.cluster.memory.garbage import GarbageCollector
from dgd.cluster.memory.namespaces import NamespaceLifecycle
from dgd.cluster.memory.preconditions import (
    check_version,
    conflict,
    not_found,
    require_metadata,
    require_name,
    require_version,
)
from dgd.cluster.memory.selectors import Selector
from dgd.cluster.memory.store import Store, Stored, StoreKey
from dgd.cluster.memory.strategies import (
    deletion_finalizers,
    mark_deleting,
    prepare,
    prepare_create,
    with_generation,
    write_scale,
)
from dgd.cluster.memory.validation import SchemaCheck, invalid, validate
from dgd.cluster.resources import NAMESPACE, SELF_SUBJECT_REVIEW, Resource
from dgd.messages.base import JSONObject
from dgd.messages.timestamps import Clock, rfc3339

NAMESPACE_ID = str(NAMESPACE)
SELF_SUBJECT_REVIEW_ID = str(SELF_SUBJECT_REVIEW)
#: The namespaces a new cluster has.
INITIAL_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")

#: The characters of a ``generateName`` suffix (``k8s.io/apimachinery/pkg/util/rand``).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class ApiServer:
    """Kubernetes REST semantics over a ``Store``. Not async: callers make each call atomic."""

    def __init__(
        self,
        resources: Iterable[Resource[Any]],
        *,
        clock: Clock,
        rng: random.Random,
        history_size: int,
        namespaces: Iterable[str] = (),
        admission: Admission | None = None,
        schema_check: SchemaCheck | None = None,
    ) -> None:
        self.resources = {str(resource): resource for resource in resources}
        self.admission = admission
        #: The CRD schema walk of the kinds we model (``None``: their Structs alone decide).
        self.schema_check = schema_check
        self.store = Store(self.resources, history_size)
        self.clock = clock
        self.rng = rng
        self.gc = GarbageCollector(self)
        self.lifecycle = NamespaceLifecycle(self)
        # A fresh cluster's namespaces, as a real API server makes them at start (their uids are
        # derived from their names, so the random stream of every later object is unchanged).
        served = self.resources.get(NAMESPACE_ID)
        if served is not None:
            for name in sorted({*INITIAL_NAMESPACES, *namespaces}):
                data: JSONObject = {
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"},
                }  # fmt: skip
                prepare_create(served, data, uid="", now=self.now())
                data["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"namespace/{name}"))
                self.store.put(self.key(served, None, name), data)

    # Reads.

    def get(self, resource: Resource[Any], namespace: str | None, name: str) -> Stored:
        stored = self.store.get(self.key(resource, namespace, name))
        if stored is None:
            raise not_found(resource, namespace, name)
        return stored

    def list(self, resource: Resource[Any], namespace: str | None, selector: Selector) -> list[Stored]:
        # Equality requirements are answered by the label index, the set the fewest objects meet first
        # (``part-of=<set>`` before ``managed-by=grove-operator``, which every object Grove made meets),
        # so a list costs what it finds, not what the resource holds; only the other requirements
        # read the labels of what it found.
        rid = self.id(resource)
        equalities = [r for r in selector.requirements if r.operator in ("=", "in")]
        rest = Selector(tuple(r for r in selector.requirements if r.operator not in ("=", "in")))
        if equalities:
            items = self.store.labelled(rid, namespace, [(r.key, r.values) for r in equalities])
        else:
            items = self.store.items(rid, namespace)
        return items if rest.empty else [stored for stored in items if rest.matches(stored.labels)]

    # Writes.

    def create(
        self, resource: Resource[Any], data: JSONObject, *, loose: bool = False, user: str = ""
    ) -> Stored:
        """POST of a new object; ``loose``: admitted as a CRD looser than the resource's model would
        admit it (the model is not checked), to see what the operator does with what it cannot read.
        A SelfSubjectReview is answered, not stored: with the requesting ``user``."""
        if self.id(resource) == SELF_SUBJECT_REVIEW_ID:
            return self._review_self(data, user)
        metadata = require_metadata(resource, data)
        if metadata.get("resourceVersion"):
            # The API server answers this with a 500 (an internal error), not a 400.
            raise ServerError("resourceVersion should not be set on objects to be created")
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = self._generate_name(resource, metadata)
        if not metadata.get("name"):
            raise invalid(resource, metadata, [Cause("metadata.name", "name or generateName is required")])
        prepare_create(resource, data, uid="", now=self.now())
        if not loose:
            data = self._admit("CREATE", resource, data, None, user)
            metadata = require_metadata(resource, data)
            validate(resource, data, self.schema_check)
        self.lifecycle.admit(resource, metadata)
        key = self.key(resource, metadata.get("namespace"), metadata["name"])
        if self.store.get(key) is not None:
            raise AlreadyExists(
                f'{resource} "{metadata["name"]}" already exists',
                kind=resource.kind,
                namespace=key[1],
                name=key[2],
            )
        metadata["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        stored = self.store.put(key, data)
        self._settle()
        return stored

    def update(
        self, resource: Resource[Any], data: JSONObject, *, status: bool = False, user: str = ""
    ) -> Stored:
        """PUT of the object (``status``: of its status subresource)."""
        metadata = require_metadata(resource, data)
        current = self.get(resource, metadata.get("namespace"), require_name(metadata))
        if status and not resource.status:
            raise not_found(resource, current.key[1], current.key[2], "status")
        require_version(resource, current, metadata.get("resourceVersion"))
        check_version(resource, current, metadata.get("resourceVersion"))
        return self._replace(resource, current, current.thaw(), data, status=status, user=user)

    def patch(
        self,
        resource: Resource[Any],
        namespace: str | None,
        name: str,
        patch: JSONObject,
        *,
        status: bool = False,
        user: str = "",
    ) -> Stored:
        """JSON merge patch of the object (``status``: of its status subresource)."""
        current = self.get(resource, namespace, name)
        if status and not resource.status:
            raise not_found(resource, namespace, name, "status")
        if not isinstance(patch, dict):
            raise Invalid("a merge patch must be a JSON object", bad_request=True)
        check_version(resource, current, (patch.get("metadata") or {}).get("resourceVersion"))
        old = current.thaw()
        patched = merge_patch.apply(old, patch)
        metadata = require_metadata(resource, patched)
        if (metadata.get("namespace"), metadata.get("name")) != (namespace, name):
            raise Invalid("a patch may not change the name or namespace", bad_request=True)
        return self._replace(resource, current, old, patched, status=status, user=user)

    def _replace(
        self,
        resource: Resource[Any],
        current: Stored,
        old: JSONObject,
        data: JSONObject,
        *,
        status: bool,
        user: str,
    ) -> Stored:
        """The write an update or a patch ends in: ``data`` prepared over ``old``, then admitted as an
        UPDATE (a status write is not admitted), then stored over ``current``."""
        new = prepare(resource, old, data, status=status)
        return self._write(
            resource, current, new if status else self._admit("UPDATE", resource, new, old, user)
        )

    def delete(
        self,
        resource: Resource[Any],
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> Stored | None:
        """Delete, or only mark deleting while finalizers remain; ``None`` when the object is gone
        (after garbage collection, which may have removed a foreground-deleted owner already)."""
        current = self.get(resource, namespace, name)
        if uid is not None and uid != current.uid:
            raise conflict(
                resource,
                current.key,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {current.uid}",
            )
        if resource_version is not None and resource_version != str(current.rv):
            raise conflict(
                resource,
                current.key,
                f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                f"ResourceVersion in object meta: {current.rv}",
            )
        if str(resource) == NAMESPACE_ID:
            self.lifecycle.terminate(current)
        else:
            self.delete_stored(current, propagation)
        self._settle()
        # The collector has run: report the object as it is now (gone, or waiting for finalizers).
        return self.store.get(current.key)

    def update_scale(
        self,
        resource: Resource[Any],
        namespace: str | None,
        name: str,
        replicas: int,
        resource_version: str | None,
    ) -> Stored:
        """Set spec replicas through the scale subresource."""
        current = self.get(resource, namespace, name)
        if resource.scale is None:
            raise not_found(resource, namespace, name, "scale")
        require_version(resource, current, resource_version)
        check_version(resource, current, resource_version)
        if replicas < 0:
            raise invalid(resource, current.metadata, [Cause("spec.replicas", f"{replicas} must be >= 0")])
        old = current.thaw()
        new = with_generation(resource, old, write_scale(resource.scale, current.thaw(), replicas))
        return self._write(resource, current, new)

    def bind(self, resource: Resource[Any], namespace: str | None, name: str, node: str) -> Stored:
        """Assign the pod to ``node`` (the ``binding`` subresource): ``spec.nodeName`` and a true
        ``PodScheduled`` condition, as the API server's binding storage writes them."""
        current = self.get(resource, namespace, name)
        new = current.thaw()
        spec = new.setdefault("spec", {})
        if spec.get("nodeName"):
            raise conflict(
                resource, current.key, f"pod {name} is already assigned to node {spec['nodeName']!r}"
            )
        if spec.get("schedulingGates"):
            raise invalid(
                resource, new["metadata"], [Cause("spec.schedulingGates", "a gated pod cannot be bound")]
            )
        if not node:
            raise invalid(resource, new["metadata"], [Cause("target.name", "a node name is required")])
        spec["nodeName"] = node
        status = new.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}, *conditions]
        return self._write(resource, current, new)

    def _review_self(self, review: JSONObject, user: str) -> Stored:
        """Who the request's user is, as authentication saw them (every user is authenticated here)."""
        answer = {
            **review,
            "metadata": {"creationTimestamp": self.now()},
            "status": {"userInfo": {"username": user, "groups": ["system:authenticated"]}},
        }
        return Stored((SELF_SUBJECT_REVIEW_ID, None, ""), answer, self.store.rv)

    # The primitives the garbage collector shares.

    def delete_stored(self, current: Stored, propagation: str | None) -> Stored | None:
        finalizers = deletion_finalizers(list(current.finalizers), propagation)
        if not finalizers:
            self.store.remove(current)
            return None
        new = current.thaw()
        new["metadata"]["finalizers"] = finalizers
        return self.commit(current, mark_deleting(new, self.now()))

    def commit(self, current: Stored, new: JSONObject) -> Stored:
        """Write ``new`` over ``current``: nothing if unchanged; a deletion if the last finalizer of a
        deleting object is gone (the response is then ``new`` at the deletion's resourceVersion)."""
        new["metadata"]["resourceVersion"] = str(current.rv)
        if new == current.data:
            return current
        # A namespace is held by its spec finalizer (``kubernetes``) until the namespace controller ends it.
        held = current.key[0] == NAMESPACE_ID and (new.get("spec") or {}).get("finalizers")
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") and not held:
            last = self.store.remove(current)
            new["metadata"]["resourceVersion"] = str(last.rv)
            return Stored(current.key, new, last.rv)
        return self.store.put(current.key, new)

    # Names and keys.

    def id(self, resource: Resource[Any]) -> str:
        """The storage id of a resource; ``NotFound`` for a kind this server does not serve."""
        rid = str(resource)
        if rid not in self.resources:
            raise NotFound(f"the server could not find the requested resource ({rid})")
        return rid

    def key(self, resource: Resource[Any], namespace: str | None, name: str) -> StoreKey:
        return (self.id(resource), namespace if resource.namespaced else None, name)

    def now(self) -> str:
        return rfc3339(self.clock())

    def _admit(
        self,
        operation: Literal["CREATE", "UPDATE"],
        resource: Resource[Any],
        new: JSONObject,
        old: JSONObject | None,
        user: str,
    ) -> JSONObject:
        """``new`` as the admission chain lets it be stored (unchanged without one)."""
        if self.admission is None:
            return new
        # A real API server decodes and checks the schema before any webhook sees the object.
        validate(resource, new, self.schema_check)
        attempt = AdmissionAttempt(
            operation=operation,
            group=resource.group,
            version=resource.version,
            kind=resource.kind,
            plural=resource.plural,
            obj=new,
            old=old,
            user=user,
            read=self._read,
        )
        return self.admission(attempt)

    def _read(self, resource: Resource[Any], namespace: str | None, name: str) -> JSONObject | None:
        """What the store holds now (admission's reads, atomic with the write they admit)."""
        stored = self.store.get(self.key(resource, namespace, name))
        return stored.thaw() if stored is not None else None

    def _write(self, resource: Resource[Any], current: Stored, new: JSONObject) -> Stored:
        validate(resource, new, self.schema_check)
        stored = self.commit(current, new)
        self._settle()
        return stored

    def _settle(self) -> None:
        """The controllers the API server's semantics rely on, run to a standstill before a call
        returns: the garbage collector, then the namespace controller (which may leave more garbage)."""
        while True:
            self.gc.settle()
            if not self.lifecycle.finalize():
                return

    def _generate_name(self, resource: Resource[Any], metadata: JSONObject) -> str:
        # Retry a few suffixes, as the API server does, before reporting the name as taken.
        for _ in range(8):
            suffix = "".join(self.rng.choice(_SUFFIX_ALPHABET) for _ in range(5))
            name = f"{metadata['generateName']}{suffix}"
            if self.store.get(self.key(resource, metadata.get("namespace"), name)) is None:
                return name
        return name
