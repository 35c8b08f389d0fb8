"""The admission and conversion webhooks over HTTPS (aiohttp, TLS 1.2 or later), on every replica.

Paths are upstream's (supplement §4.1, §4.8); each answers an ``AdmissionReview`` (or, at
``/convert``, a ``ConversionReview``) with the pure handlers of ``dgd.domain.admission.webhooks``,
run in a worker thread so a large object never holds the event loop. A body over 8 MiB is answered
413 (before it is read whole); a body that is not a review, 400; a handler that raises, an
``allowed: false`` answer with code 500 and a sentence (the traceback goes to the log), never a
dropped connection. ``/convert`` is served in cluster-wide mode only: a namespace-restricted
operator leaves conversion to the cluster-wide one.

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

from dgd.domain.admission import webhooks as handlers
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

logger = logging.getLogger("dgd.webhooks")

#: The largest review body served; larger ones get 413 (the API server's own limit is 3 MiB per
#: object, a review carries two).
MAX_BODY = 8 * 1024 * 1024

#: Path -> handler, as upstream serves them (§4.1). Not served: the DGDR and DynamoModel handlers
#: (kinds this operator does not manage), upstream's v1alpha1 DCD validator (no configuration points at
#: it) and the pod checkpoint-restore mutator (not built yet: checkpoint-restore pods are shaped at
#: render time only).
ADMISSION_PATHS: Mapping[str, Handler] = {
    "/mutate/nvidia.com/v1beta1/dynamographdeployments": handlers.mutate_dgd,
    "/validate/nvidia.com/v1beta1/dynamographdeployments": handlers.validate_dgd,
    "/mutate-nvidia-com-v1beta1-dynamocomponentdeployment": handlers.mutate_dcd,
    "/validate/nvidia.com/v1beta1/dynamocomponentdeployments": handlers.validate_dcd,
    "/validate-nvidia-com-v1alpha1-dynamocheckpoint": handlers.validate_checkpoint,
}
CONVERSION_PATH = "/convert"

Converter = Callable[[ConversionRequest], ConversionResponse]
Review = TypeVar("Review", AdmissionReviewRequest, ConversionReviewRequest)


class TLS:
    """The server's TLS context and the files it loads them from; ``load`` swaps the certificate
    for every handshake after it (connections already open keep theirs)."""

    def __init__(self) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._folder = Path(tempfile.mkdtemp(prefix="dgd-webhook-"))
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
) -> web.Application:
    """The webhook routes (see the module); ``converter`` ``None``: no ``/convert``."""
    app = web.Application(client_max_size=MAX_BODY)
    for path, handler in paths.items():
        app.router.add_post(path, partial(_admit, handler, settings))
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


async def _convert(converter: Converter, request: web.Request) -> web.Response:
    review = await _read(request, ConversionReviewRequest)
    if isinstance(review, web.Response):
        return review
    assert review.request is not None
    response = await anyio.to_thread.run_sync(converter, review.request)
    return _json(ConversionReview(api_version=review.api_version, kind=review.kind, response=response))
