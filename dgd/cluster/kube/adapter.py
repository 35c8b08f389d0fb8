"""The kube adapter: the cluster port on a real Kubernetes API server, through kubernetes-asyncio.

Each port method is one REST call (``dgd.cluster.protocol``) sent with kubernetes-asyncio's
``ApiClient`` (configuration, TLS, credentials) and decoded straight from the response bytes into
the resource's msgspec Struct, or into fresh raw JSON (``kube_wire``). Merge patches always go
out as ``application/merge-patch+json``. Errors are the port's (``dgd.cluster.errors``), mapped
from the ``Status`` the server answers with.

Where the API leaves a choice to the client, the adapter does what the memory adapter does, so
callers see one behaviour: ``delete`` returns ``None`` once the object is gone and the object
while finalizers hold it; ``emit`` names an Event ``<regarding>.<16 hex digits>`` and stamps its
``eventTime`` unless given; list items lacking ``apiVersion``/``kind`` (built-in kinds) get them.

Options: ``qps``/``burst``: the client-side rate limit (``None``: unlimited); ``request_timeout``:
seconds a non-watch request may take; ``watch_buffer``: events a watch may fall behind before it
is dropped (``kube_watch``); ``watch_idle_timeout``: seconds of silence after which a watch is
considered stalled and ends; ``watch_timeout``: the ``timeoutSeconds`` asked of the server.
"""

from __future__ import annotations

import builtins
import random
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, TypedDict, TypeVar, Unpack

import anyio
import msgspec
from kubernetes_asyncio.client import ApiClient

from dgd.cluster.errors import Invalid
from dgd.cluster.kube.config import api_client
from dgd.cluster.kube.rate import RateLimiter
from dgd.cluster.kube.watch import KubeWatch
from dgd.cluster.kube.wire import MERGE_PATCH, Subject, Transport, path
from dgd.cluster.protocol import ObjectList, Preconditions, Propagation, Scale
from dgd.cluster.resources import EVENT, ObjectKey, Rejected, Resource
from dgd.messages.base import JSONObject
from dgd.messages.meta import Event
from dgd.messages.timestamps import Clock, rfc3339_micro, wall_clock

if TYPE_CHECKING:
    from dgd.cluster.protocol import Cluster

T = TypeVar("T")
Item = TypeVar("Item")


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""


class _List(msgspec.Struct, Generic[Item]):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[Item] | None = None


class _APIVersions(msgspec.Struct):
    versions: builtins.list[str] = msgspec.field(default_factory=builtins.list)


class _GroupVersion(msgspec.Struct):
    groupVersion: str


class _APIGroup(msgspec.Struct):
    versions: builtins.list[_GroupVersion] = msgspec.field(default_factory=builtins.list)


class _APIGroupList(msgspec.Struct):
    groups: builtins.list[_APIGroup] = msgspec.field(default_factory=builtins.list)


#: Discovery requests are about no kind in particular.
_DISCOVERY = Subject(Resource[JSONObject](group="", version="v1", kind="APIResourceList", plural=""))


class ClientOptions(TypedDict, total=False):
    """The options of ``KubeCluster`` that ``from_config`` passes on; their defaults are the constructor's."""

    qps: float | None
    burst: int
    request_timeout: float | None
    watch_buffer: int
    watch_idle_timeout: float | None
    watch_timeout: float | None


class KubeCluster:
    """The cluster port over a Kubernetes API server (``dgd.cluster.protocol.Cluster``).

    Owns ``api`` (closed by ``aclose`` or on leaving ``async with``). ``from_config`` builds one
    from a kubeconfig or the in-cluster service account.
    """

    def __init__(
        self,
        api: ApiClient,
        *,
        qps: float | None = 50.0,
        burst: int = 100,
        request_timeout: float | None = 30.0,
        watch_buffer: int = 1000,
        watch_idle_timeout: float | None = None,
        watch_timeout: float | None = None,
        clock: Clock = wall_clock,
        rng: random.Random | None = None,
    ) -> None:
        limiter = RateLimiter(qps, burst) if qps is not None else None
        self._transport = Transport(api, limiter=limiter, timeout=request_timeout)
        self._watch_buffer = watch_buffer
        self._watch_idle_timeout = watch_idle_timeout
        self._watch_timeout = watch_timeout
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()

    @classmethod
    async def from_config(
        cls,
        kubeconfig: str | Path | None = None,
        *,
        context: str | None = None,
        **options: Unpack[ClientOptions],
    ) -> KubeCluster:
        """A cluster from a kubeconfig path, ``$KUBECONFIG``, or the in-cluster service account
        (``kube_config.api_client``; ``ConfigError`` if none is usable), with the constructor's options."""
        return cls(await api_client(kubeconfig, context=context), **options)

    @property
    def api(self) -> ApiClient:
        return self._transport.api

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._transport.api.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()

    # Reads.

    async def get(self, key: ObjectKey[T]) -> T:
        subject = Subject(key.resource, key.namespace, key.name)
        data = await self._transport.request("GET", path(key.resource, key.namespace, key.name), subject)
        return key.resource.decode(data)

    async def list(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> ObjectList[T]:
        query = [("labelSelector", label_selector)] if label_selector else []
        data = await self._transport.request(
            "GET", path(resource, namespace), Subject(resource, namespace), query=query
        )
        if len(data) < OFF_LOOP_BYTES:
            return _decode_list(resource, data)
        # Decoding thousands of objects takes the CPU for tens of milliseconds or more: not on the loop,
        # where it would hold every watch, reconcile and lease renewal meanwhile.
        return await anyio.to_thread.run_sync(_decode_list, resource, data)

    def watch(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        bookmarks: bool = False,
    ) -> KubeWatch[T]:
        query: builtins.list[tuple[str, str]] = [("watch", "1")]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if self._watch_timeout is not None:
            query.append(("timeoutSeconds", str(max(1, round(self._watch_timeout)))))
        return KubeWatch(
            self._transport,
            resource,
            path(resource, namespace),
            query,
            subject=Subject(resource, namespace),
            capacity=self._watch_buffer,
            droppable=resource_version not in (None, "", "0"),
            idle_timeout=self._watch_idle_timeout,
        )

    async def group_versions(self) -> builtins.list[str]:
        """Every ``group/version`` the API server serves (``v1`` for the core group), sorted — what
        the operator's feature gates probe. Not part of the port: read once at start."""
        core = msgspec.json.decode(
            await self._transport.request("GET", "/api", _DISCOVERY), type=_APIVersions
        )
        groups = msgspec.json.decode(
            await self._transport.request("GET", "/apis", _DISCOVERY), type=_APIGroupList
        )
        served = set(core.versions)
        served.update(version.groupVersion for group in groups.groups for version in group.versions)
        return sorted(served)

    # Writes.

    async def create(self, resource: Resource[T], obj: T) -> T:
        data = _to_json(obj)
        namespace, name = _where(resource, data)
        url = path(resource, namespace)
        return resource.decode(
            await self._transport.request("POST", url, Subject(resource, namespace, name), body=data)
        )

    async def replace(self, resource: Resource[T], obj: T) -> T:
        return await self._put(resource, _to_json(obj), "")

    async def patch(self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None) -> T:
        return await self._patch(key, patch, resource_version, "")

    async def delete(
        self,
        key: ObjectKey[T],
        *,
        propagation: Propagation | None = None,
        preconditions: Preconditions | None = None,
    ) -> T | None:
        options: JSONObject = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation is not None:
            options["propagationPolicy"] = propagation
        if preconditions is not None:
            options["preconditions"] = {
                field: value
                for field, value in (
                    ("uid", preconditions.uid),
                    ("resourceVersion", preconditions.resource_version),
                )
                if value is not None
            }
        subject = Subject(key.resource, key.namespace, key.name)
        url = path(key.resource, key.namespace, key.name)
        data = await self._transport.request("DELETE", url, subject, body=options)
        answer = msgspec.json.decode(data)
        if not isinstance(answer, dict) or answer.get("kind") == "Status" or not _held(answer):
            return None
        return key.resource.decode(data)

    async def replace_status(self, resource: Resource[T], obj: T) -> T:
        return await self._put(resource, _to_json(obj), "status")

    async def patch_status(
        self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None
    ) -> T:
        return await self._patch(key, patch, resource_version, "status")

    async def get_scale(self, key: ObjectKey[T]) -> Scale:
        subject = Subject(key.resource, key.namespace, key.name)
        data = await self._transport.request(
            "GET", path(key.resource, key.namespace, key.name, "scale"), subject
        )
        return msgspec.json.decode(data, type=Scale)

    async def replace_scale(self, key: ObjectKey[T], scale: Scale) -> Scale:
        subject = Subject(key.resource, key.namespace, key.name)
        url = path(key.resource, key.namespace, key.name, "scale")
        data = await self._transport.request("PUT", url, subject, body=msgspec.to_builtins(scale))
        return msgspec.json.decode(data, type=Scale)

    async def bind(self, key: ObjectKey[T], node: str) -> None:
        subject = Subject(key.resource, key.namespace, key.name)
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": key.name, "namespace": key.namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        url = path(key.resource, key.namespace, key.name, "binding")
        await self._transport.request("POST", url, subject, body=binding)

    async def emit(self, event: Event) -> Event:
        data = _to_json(event)
        metadata = data.setdefault("metadata", {})
        regarding = data.get("regarding") or {}
        metadata.setdefault("namespace", regarding.get("namespace") or "default")
        if not metadata.get("name") and not metadata.get("generateName"):
            metadata["name"] = f"{regarding.get('name') or 'event'}.{self._rng.getrandbits(64):016x}"
        data.setdefault("eventTime", rfc3339_micro(self._clock()))
        return await self._create_event(data)

    # Plumbing.

    async def _create_event(self, data: JSONObject) -> Event:
        namespace = data["metadata"]["namespace"]
        subject = Subject(EVENT, namespace, data["metadata"].get("name"))
        return EVENT.decode(await self._transport.request("POST", path(EVENT, namespace), subject, body=data))

    async def _put(self, resource: Resource[T], data: JSONObject, sub: str) -> T:
        namespace, name = _where(resource, data)
        if not name:
            raise Invalid("metadata.name: Required value", bad_request=True)
        url = path(resource, namespace, name, sub)
        return resource.decode(
            await self._transport.request("PUT", url, Subject(resource, namespace, name), body=data)
        )

    async def _patch(self, key: ObjectKey[T], patch: JSONObject, resource_version: str | None, sub: str) -> T:
        body = _to_json(patch)
        if resource_version is not None:
            body.setdefault("metadata", {})["resourceVersion"] = resource_version
        # An empty body would not be sent at all: patch nothing explicitly.
        body = body or {"metadata": {}}
        url = path(key.resource, key.namespace, key.name, sub)
        subject = Subject(key.resource, key.namespace, key.name)
        data = await self._transport.request("PATCH", url, subject, body=body, content_type=MERGE_PATCH)
        return key.resource.decode(data)


#: A list response this large (bytes) is decoded in a worker thread.
OFF_LOOP_BYTES = 256 * 1024


def _decode_list(resource: Resource[T], data: bytes) -> ObjectList[T]:
    """A list response: items decoded straight to the resource's Struct, or as raw JSON given the
    ``apiVersion``/``kind`` a server leaves out of built-in kinds' items."""
    if not resource.raw and resource.model is not None:
        try:
            typed = msgspec.json.decode(data, type=_List[resource.model])  # type: ignore[name-defined]
            return ObjectList(typed.items or [], typed.metadata.resourceVersion)
        except msgspec.ValidationError:
            pass
    raw = msgspec.json.decode(data, type=_List[JSONObject])
    items: list[T] = []
    refused: list[Rejected] = []
    for item in raw.items or []:
        item.setdefault("apiVersion", resource.api_version)
        item.setdefault("kind", resource.kind)
        # One object the model refuses is left out (and named), never the whole list.
        decoded = resource.convert_or_reject(item)
        (refused if isinstance(decoded, Rejected) else items).append(decoded)  # type: ignore[arg-type]
    return ObjectList(items, raw.metadata.resourceVersion, refused)


def _to_json(obj: Any) -> JSONObject:
    """A fresh JSON copy of a Struct or of raw JSON (``Invalid`` if it is not JSON)."""
    try:
        data = msgspec.to_builtins(obj)
    except (TypeError, msgspec.EncodeError) as error:
        raise Invalid(f"the object is not JSON: {error}", bad_request=True) from None
    if not isinstance(data, dict):
        raise Invalid("the body must be a JSON object", bad_request=True)
    return data


def _where(resource: Resource[Any], data: JSONObject) -> tuple[str | None, str | None]:
    """The namespace (required for a namespaced kind) and name of an object to write."""
    metadata = data.get("metadata") or {}
    namespace = metadata.get("namespace") if resource.namespaced else None
    if resource.namespaced and not namespace:
        raise Invalid(
            f"{resource.kind} {metadata.get('name')!r} is invalid: metadata.namespace: Required value",
            kind=resource.kind,
            name=metadata.get("name"),
        )
    return namespace, metadata.get("name")


def _held(obj: JSONObject) -> bool:
    """Whether a deleted object is still there (finalizers pending, or a grace period running)."""
    metadata = obj.get("metadata") or {}
    return bool(metadata.get("deletionTimestamp")) and bool(
        metadata.get("finalizers") or metadata.get("deletionGracePeriodSeconds")
    )


if TYPE_CHECKING:
    # mypy proves the adapter implements the port.
    def _check(cluster: KubeCluster) -> Cluster:
        return cluster
