"""The admission and conversion webhooks over HTTPS (aiohttp, TLS 1.2 or later), on every replica.

Paths are upstream's (supplement §4.1, §4.8); each answers an ``AdmissionReview`` (or, at
``/convert``, a ``ConversionReview``) with the pure handlers of ``dgd.domain.admission.webhooks``,
run in a worker thread so a large object never holds the event loop. A body over 8 MiB is answered
413 (before it is read whole); a body that is not a review, 400; a handler that raises, an
``allowed: false`` answer with code 500 and a sentence (the traceback goes to the log), never a
dropped connection. ``/convert`` is served in cluster-wide mode only: a namespace-restricted
operator leaves conversion to the cluster-wide one.

The pod checkpoint-restore mutator (``POD_RESTORE_PATH``, dgd-domain §10.6 (b)) needs the
DynamoCheckpoint a candidate pod names: the pure rules say which (or answer a skip at once), the
checkpoint is read on the loop with a GET through the cluster client (every replica serves admission,
and only the leader runs the informers, so there is no cache to read on the others), then the rules
answer in a worker thread. It never refuses a pod: a checkpoint that cannot be read within
``READ_TIMEOUT``, or a failure of its own, is answered "allowed, unchanged" with the reason, as
failurePolicy ``Ignore`` would have it.

DGD validation reads the cluster too (``dgd.daemon.lookups``): on a create, the ClusterTopologyBindings
the DGD names and whether the InferencePool API is served, on the loop, before the rules run in a
worker thread.

Replicas serve whether or not they lead: admission must not wait for an election.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
import msgspec
from aiohttp import web

from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CHECKPOINT
from dgd.daemon.lookups import Discover, look_up
from dgd.domain.admission import pod_restore
from dgd.domain.admission import webhooks as handlers
from dgd.domain.admission.pod_restore import Candidate, Unavailable
from dgd.domain.admission.webhooks import AdmissionSettings, Handler
from dgd.messages.admission import (
    AdmissionRequest,
    AdmissionResponse,
    AdmissionReview,
    AdmissionReviewRequest,
    ConversionRequest,
    ConversionResponse,
    ConversionReview,
    ConversionReviewRequest,
)
from dgd.messages.base import JSONObject

logger = logging.getLogger("dgd.webhooks")

#: The largest review body served; larger ones get 413 (the API server's own limit is 3 MiB per
#: object, a review carries two).
MAX_BODY = 8 * 1024 * 1024

#: Path -> handler, as upstream serves them (§4.1); the pod checkpoint-restore mutator is served apart
#: (``POD_RESTORE_PATH``). Not served: the DGDR and DynamoModel handlers (kinds this operator does not
#: manage) and upstream's v1alpha1 DCD validator (no configuration points at it).
ADMISSION_PATHS: Mapping[str, Handler] = {
    "/mutate/nvidia.com/v1beta1/dynamographdeployments": handlers.mutate_dgd,
    "/validate/nvidia.com/v1beta1/dynamographdeployments": handlers.validate_dgd,
    "/mutate-nvidia-com-v1beta1-dynamocomponentdeployment": handlers.mutate_dcd,
    "/validate/nvidia.com/v1beta1/dynamocomponentdeployments": handlers.validate_dcd,
    "/validate-nvidia-com-v1alpha1-dynamocheckpoint": handlers.validate_checkpoint,
}
CONVERSION_PATH = "/convert"
POD_RESTORE_PATH = "/mutate-core-v1-pod-checkpoint-restore"
#: Seconds the pod restore mutator waits for its checkpoint read (the API server waits 10 s in all).
READ_TIMEOUT = 5.0

Converter = Callable[[ConversionRequest], ConversionResponse]
Review = TypeVar("Review", AdmissionReviewRequest, ConversionReviewRequest)


class TLS:
    """The server's TLS context and the files it loads them from; ``load`` swaps the certificate
    for every handshake after it (connections already open keep theirs)."""

    def __init__(self, prefix: str = "dgd-webhook-") -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._folder = Path(tempfile.mkdtemp(prefix=prefix))
        self.loaded: tuple[bytes, bytes] | None = None

    def load(self, cert: bytes, key: bytes) -> bool:
        """Serve ``cert`` (PEM chain) with ``key``; ``False`` when they are what is served already.
        Raises ``ssl.SSLError`` when they do not belong together."""
        if self.loaded == (cert, key):
            return False
        # ssl loads certificates only from files: write them where only this process reads.
        cert_file, key_file = self._folder / "tls.crt", self._folder / "tls.key"
        for path, data in ((cert_file, cert), (key_file, key)):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(data)
        self.context.load_cert_chain(cert_file, key_file)
        self.loaded = (cert, key)
        return True

    def close(self) -> None:
        for name in ("tls.crt", "tls.key"):
            (self._folder / name).unlink(missing_ok=True)
        self._folder.rmdir()


def webhook_app(
    settings: AdmissionSettings,
    *,
    converter: Converter | None,
    paths: Mapping[str, Handler] = ADMISSION_PATHS,
    cluster: Cluster | None = None,
    discover: Discover | None = None,
) -> web.Application:
    """The webhook routes (see the module); ``converter`` ``None``: no ``/convert``; ``cluster``: what
    the pod restore mutator reads checkpoints and DGD validation its lookups through (``None``: the
    mutator is not served and the lookups are skipped); ``discover``: API discovery, for whether the
    InferencePool API is served (``None``: that check is skipped)."""
    app = web.Application(client_max_size=MAX_BODY)
    for path, handler in paths.items():
        if handler is handlers.validate_dgd and cluster is not None:
            app.router.add_post(path, partial(_validate_dgd, settings, cluster, discover))
        else:
            app.router.add_post(path, partial(_admit, handler, settings))
    if cluster is not None:
        app.router.add_post(POD_RESTORE_PATH, partial(_restore, settings, cluster))
    if converter is not None:
        app.router.add_post(CONVERSION_PATH, partial(_convert, converter))
    return app


async def _read(request: web.Request, kind: type[Review]) -> Review | web.Response:
    """The review in the body, or the 400 answer to a body that is not one (aiohttp answers 413 to
    one over ``MAX_BODY`` on its own)."""
    try:
        review = msgspec.json.decode(await request.read(), type=kind)
    except msgspec.DecodeError as error:  # ValidationError included
        return _refuse(request, f"the body is not a v1 {_named(kind)}: {error}")
    if review.request is None:
        return _refuse(request, f"the body is not a v1 {_named(kind)}: it has no request")
    return review


def _named(kind: type[Review]) -> str:
    return kind.__name__.removesuffix("Request")


def _refuse(request: web.Request, why: str) -> web.Response:
    logger.warning("refused a request to %s: %s", request.path, why)
    return web.Response(status=400, text=why + "\n")


def _json(review: AdmissionReview | ConversionReview) -> web.Response:
    return web.Response(body=msgspec.json.encode(review), content_type="application/json")


async def _admit(handler: Handler, settings: AdmissionSettings, request: web.Request) -> web.Response:
    review = await _read(request, AdmissionReviewRequest)
    if isinstance(review, web.Response):
        return review
    assert review.request is not None
    response = await anyio.to_thread.run_sync(_answer, handler, review.request, settings)
    return _json(AdmissionReview(api_version=review.api_version, kind=review.kind, response=response))


async def _validate_dgd(
    settings: AdmissionSettings, cluster: Cluster, discover: Discover | None, request: web.Request
) -> web.Response:
    review = await _read(request, AdmissionReviewRequest)
    if isinstance(review, web.Response):
        return review
    assert review.request is not None
    lookups = await look_up(cluster, discover, review.request)
    handler = partial(handlers.validate_dgd, lookups=lookups)
    response = await anyio.to_thread.run_sync(_answer, handler, review.request, settings)
    return _json(AdmissionReview(api_version=review.api_version, kind=review.kind, response=response))


def _answer(handler: Handler, request: AdmissionRequest, settings: AdmissionSettings) -> AdmissionResponse:
    try:
        return handler(request, settings)
    except Exception:  # a bug in one rule must not break admission of everything else
        logger.exception(
            "the admission handler failed on %s %s/%s", request.kind.kind, request.namespace, request.name
        )
        return handlers.refused(
            request,
            500,
            "InternalError",
            "the admission webhook failed on an internal error (the operator's log has the details)",
        )


async def _restore(settings: AdmissionSettings, cluster: Cluster, request: web.Request) -> web.Response:
    review = await _read(request, AdmissionReviewRequest)
    if isinstance(review, web.Response):
        return review
    admission = review.request
    assert admission is not None
    try:
        response = await _restored(settings, cluster, admission)
    except Exception:  # a bug here must not keep pods from being created
        logger.exception("the pod restore mutator failed on %s", _pod_named(admission))
        response = handlers.allowed(admission, reason="checkpoint restore mutation unavailable")
    return _json(AdmissionReview(api_version=review.api_version, kind=review.kind, response=response))


async def _restored(
    settings: AdmissionSettings, cluster: Cluster, request: AdmissionRequest
) -> AdmissionResponse:
    """The restore mutator's answer: the rules' skip, or the checkpoint read and the rules' decision."""
    wanted = pod_restore.candidate(request, settings)
    if isinstance(wanted, AdmissionResponse):
        return wanted
    found = await read_checkpoint(cluster, wanted)
    if isinstance(found, Unavailable):
        logger.warning("pod %s is not restored: %s", _pod_named(request), found.why)
    response = await anyio.to_thread.run_sync(pod_restore.mutate_pod, request, settings, found)
    if response.patch is not None:
        logger.info("pod %s is restored from checkpoint %s", _pod_named(request), wanted.checkpoint)
    return response


async def read_checkpoint(cluster: Cluster, wanted: Candidate) -> JSONObject | Unavailable:
    """The DynamoCheckpoint a candidate pod names, read through the API, or why it could not be
    (within ``READ_TIMEOUT``)."""
    try:
        with anyio.fail_after(READ_TIMEOUT):
            found: JSONObject = await cluster.get(CHECKPOINT.key(wanted.namespace, wanted.checkpoint))
            return found
    except TimeoutError:
        return Unavailable(f"the API server did not answer within {READ_TIMEOUT:g}s")
    except ClusterError as error:
        return Unavailable(str(error) or type(error).__name__)


def _pod_named(request: AdmissionRequest) -> str:
    metadata = (request.object or {}).get("metadata") or {}
    name = request.name or metadata.get("name") or f"{metadata.get('generateName') or ''}*"
    return f"{request.namespace}/{name}"


async def _convert(converter: Converter, request: web.Request) -> web.Response:
    review = await _read(request, ConversionReviewRequest)
    if isinstance(review, web.Response):
        return review
    assert review.request is not None
    response = await anyio.to_thread.run_sync(converter, review.request)
    return _json(ConversionReview(api_version=review.api_version, kind=review.kind, response=response))
