"""The cluster port: the one way actors touch the Kubernetes API.

Every method maps onto one REST call, so the memory adapter and the kube adapter implement the
same thing and raise the same errors (``dgd.cluster.errors``):

========================  =====================================================================
``get``                   ``GET    .../<plural>/<name>``
``list``                  ``GET    .../<plural>?labelSelector=``
``watch``                 ``GET    .../<plural>?watch=1&resourceVersion=&allowWatchBookmarks=``
``create``                ``POST   .../<plural>``
``replace``               ``PUT    .../<plural>/<name>``          (resourceVersion precondition)
``patch``                 ``PATCH  .../<plural>/<name>``          (``application/merge-patch+json``)
``delete``                ``DELETE .../<plural>/<name>``          (propagationPolicy, preconditions)
``replace_status``        ``PUT    .../<plural>/<name>/status``
``patch_status``          ``PATCH  .../<plural>/<name>/status``
``get_scale``             ``GET    .../<plural>/<name>/scale``
``replace_scale``         ``PUT    .../<plural>/<name>/scale``
``bind``                  ``POST   /api/v1/namespaces/<ns>/pods/<name>/binding``
``emit``                  ``POST   /apis/events.k8s.io/v1/namespaces/<ns>/events``
========================  =====================================================================

Objects cross the port as the resource's type: a msgspec Struct for our kinds, raw JSON (a fresh
dict the caller owns) for the rest. A write never returns the caller's own object: it returns what
the server stored, with its new resourceVersion.
"""

from __future__ import annotations

import builtins
from types import TracebackType
from typing import Generic, Literal, Protocol, Self, TypeVar

import msgspec

from dgd.cluster.resources import ObjectKey, Rejected, Resource
from dgd.messages.base import JSONObject, Model
from dgd.messages.meta import Event, ObjectMeta

T = TypeVar("T")

#: How ``delete`` treats the object's dependents (``metav1.DeletionPropagation``).
Propagation = Literal["Background", "Foreground", "Orphan"]

#: What happened to an object, or ``BOOKMARK``: "you have seen everything up to this resourceVersion".
EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


class WatchEvent(msgspec.Struct, Generic[T], frozen=True):
    """One change seen by a watch, in resourceVersion order.

    ``object`` is the object after the change (for ``DELETED``: its last state, stamped with the
    deletion's resourceVersion); it is ``None`` for ``BOOKMARK``, and for an object the resource's
    model refuses, which ``rejected`` then names. ``resource_version`` is the point a new watch resumes
    from without missing or repeating anything.
    """

    type: EventType
    object: T | None
    resource_version: str
    rejected: Rejected | None = None


class ObjectList(msgspec.Struct, Generic[T], frozen=True):
    """The objects of a list call, ordered by namespace then name, and the resourceVersion of the list
    (watch from it to see every later change); ``rejected``: the objects listed that the resource's
    model refuses (left out of ``items``)."""

    items: builtins.list[T]
    resource_version: str
    rejected: builtins.list[Rejected] = msgspec.field(default_factory=builtins.list)


class Preconditions(msgspec.Struct, frozen=True):
    """Delete only if the object still has this uid and/or resourceVersion (else ``Conflict``)."""

    uid: str | None = None
    resource_version: str | None = None


class ScaleSpec(Model, frozen=True):
    """The desired replicas."""

    replicas: int = 0


class ScaleStatus(Model, frozen=True):
    """The observed replicas and the label selector of the pods they count."""

    replicas: int = 0
    selector: str | None = None


SCALE_API_VERSION = "autoscaling/v1"


class Scale(Model, frozen=True, tag_field="kind", tag="Scale"):
    """An ``autoscaling/v1`` Scale: the replicas view of a scalable object (same name, uid and
    resourceVersion as the object)."""

    api_version: str
    metadata: ObjectMeta
    spec: ScaleSpec = msgspec.field(default_factory=ScaleSpec)
    status: ScaleStatus | None = None


class Watch(Protocol[T]):
    """An open watch: enter it to start, iterate its events, leave or ``aclose`` it to stop.

    Entering raises a request error (``Forbidden``, ``TooManyRequests``, ...). Iteration yields
    events in resourceVersion order, raises ``Gone`` when the requested resourceVersion has left the
    server's history (re-list, then watch from the list's resourceVersion), and ends (plain
    ``StopAsyncIteration``) when the server closes the stream: resume from the last
    ``resource_version`` seen.

    An adapter's watch that subclasses it inherits leaving (``aclose``) and iterating (itself).
    """

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent[T]: ...

    async def aclose(self) -> None: ...


class ClusterReader(Protocol):
    """The reads of the port: what a reconciler may ask of the API besides its cache. Every method may
    raise any ``ClusterError``."""

    async def get(self, key: ObjectKey[T]) -> T:
        """The object, or ``NotFound``."""
        ...

    async def list(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> ObjectList[T]:
        """Objects in ``namespace`` (every namespace when ``None``) matching ``label_selector``
        (``a=b,c!=d,e in (f,g),!h``; a malformed selector is ``Invalid``)."""
        ...

    async def get_scale(self, key: ObjectKey[T]) -> Scale:
        """The scale subresource (``NotFound`` for a kind without one)."""
        ...


class ClusterWatcher(ClusterReader, Protocol):
    """Reads and watches: what an informer needs (a list, then a watch from its resourceVersion)."""

    def watch(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        bookmarks: bool = False,
    ) -> Watch[T]:
        """Changes after ``resource_version``; without one, first an ``ADDED`` for every existing
        object. Objects that start or stop matching the selector arrive as ``ADDED``/``DELETED``.
        With ``bookmarks`` the server may send ``BOOKMARK`` events."""
        ...


class ClusterWriter(Protocol):
    """The writes of objects' spec and metadata (and their scale), for the named writers that hold one
    (``dgd.actors.machinery.sync.Syncer``, the DGD's own writer). Every method may raise any
    ``ClusterError``."""

    async def create(self, resource: Resource[T], obj: T) -> T:
        """Store a new object (name, or ``generateName``); ``AlreadyExists`` if the name is taken.
        The server sets uid, resourceVersion, creationTimestamp and generation 1, and drops
        ``status`` for kinds with a status subresource."""
        ...

    async def replace(self, resource: Resource[T], obj: T) -> T:
        """Replace the object; ``Conflict`` if ``metadata.resourceVersion`` is set and stale.
        ``status`` is ignored for kinds with a status subresource."""
        ...

    async def patch(self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None) -> T:
        """Apply a JSON merge patch (RFC 7386); ``Conflict`` if ``resource_version`` is given and stale."""
        ...

    async def delete(
        self,
        key: ObjectKey[T],
        *,
        propagation: Propagation | None = None,
        preconditions: Preconditions | None = None,
    ) -> T | None:
        """Delete the object: ``None`` once it is gone, or the object if it only got a
        deletionTimestamp (finalizers pending). Dependents follow ``propagation`` (default
        ``Background``)."""
        ...

    async def replace_scale(self, key: ObjectKey[T], scale: Scale) -> Scale:
        """Set ``spec.replicas`` through the scale subresource; ``Conflict`` if
        ``scale.metadata.resource_version`` is set and stale."""
        ...


class StatusWriter(Protocol):
    """The writes of the status subresource: held by the one status writer of each kind."""

    async def replace_status(self, resource: Resource[T], obj: T) -> T:
        """Replace only ``status``; every other change in ``obj`` is ignored. Never bumps generation."""
        ...

    async def patch_status(
        self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None
    ) -> T:
        """Merge-patch only ``status``; every other change in the patch is ignored."""
        ...


class Cluster(ClusterWatcher, ClusterWriter, StatusWriter, Protocol):
    """Everything actors may do to the API (each adapter implements all of it). Every method may raise
    any ``ClusterError``. Hand a collaborator only the part it needs: ``ClusterReader``,
    ``ClusterWatcher``, ``ClusterWriter`` or ``StatusWriter``."""

    async def bind(self, key: ObjectKey[T], node: str) -> None:
        """Assign the pod ``key`` to ``node`` (a ``Binding``, as a scheduler does: ``spec.nodeName``
        cannot be written any other way); ``Conflict`` if it is already assigned."""
        ...

    async def emit(self, event: Event) -> Event:
        """Record an ``events.k8s.io/v1`` Event (a name and ``eventTime`` are filled in if missing)."""
        ...
