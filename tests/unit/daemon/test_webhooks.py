"""The webhook server over HTTPS: reviews in, answers out, bad bodies refused with the right code, a
failing handler contained, certificates swapped without a restart."""

from __future__ import annotations

import base64
import datetime
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import anyio.streams.tls
import pytest
import yaml
from cryptography import x509

from dgd.daemon import certificates
from dgd.daemon.servers import Server
from dgd.daemon.webhooks import ADMISSION_PATHS, MAX_BODY, TLS, webhook_app
from dgd.domain.admission.webhooks import CONVERTER, AdmissionSettings, Handler
from dgd.messages.admission import AdmissionRequest, AdmissionResponse

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "agg.yaml"
MUTATE = "/mutate/nvidia.com/v1beta1/dynamographdeployments"
VALIDATE = "/validate/nvidia.com/v1beta1/dynamographdeployments"
NOW = datetime.datetime.now(datetime.UTC)


@asynccontextmanager
async def serving(
    issued: certificates.Certificates, paths: Mapping[str, Handler] = ADMISSION_PATHS
) -> AsyncIterator[tuple[str, TLS]]:
    tls = TLS()
    tls.load(issued.cert, issued.key)
    server = await Server.start(
        webhook_app(AdmissionSettings(), converter=None, paths=paths), "127.0.0.1", 0, tls=tls.context
    )
    try:
        yield f"https://127.0.0.1:{server.port}", tls
    finally:
        await server.stop()
        tls.close()


def trusting(ca: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.decode())


def review(obj: dict[str, Any], *, operation: str = "CREATE", version: str = "v1beta1") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "e911857d-c318-11e8-bbad-025000000001",
            "kind": {"group": "nvidia.com", "version": version, "kind": "DynamoGraphDeployment"},
            "resource": {"group": "nvidia.com", "version": version, "resource": "dynamographdeployments"},
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "name": obj["metadata"]["name"],
            "namespace": obj["metadata"].get("namespace", "default"),
            "object": obj,
        },
    }


def example() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return document


async def post(url: str, ca: bytes, body: bytes) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            url, data=body, ssl=trusting(ca), headers={"Content-Type": "application/json"}
        ) as answer,
    ):
        text = await answer.text()
        return answer.status, json.loads(text) if answer.content_type == "application/json" else text


@pytest.fixture(scope="module")
def issued() -> certificates.Certificates:
    return certificates.issue(["localhost"], ["127.0.0.1"], now=NOW)


async def test_defaulting_answers_a_json_patch_of_what_it_sets(issued: certificates.Certificates) -> None:
    async with serving(issued) as (url, _):
        status, answer = await post(url + MUTATE, issued.ca_cert, json.dumps(review(example())).encode())

    response = answer["response"]
    assert (status, answer["apiVersion"], answer["kind"]) == (200, "admission.k8s.io/v1", "AdmissionReview")
    assert (response["uid"], response["allowed"], response["patchType"]) == (
        "e911857d-c318-11e8-bbad-025000000001",
        True,
        "JSONPatch",
    )
    # the example has no annotations and sets replicas but not minAvailable: exactly those are added
    assert json.loads(base64.b64decode(response["patch"])) == [
        {
            "op": "add",
            "path": "/metadata/annotations",
            "value": {
                "nvidia.com/workload-provider": "grove",
                "nvidia.com/dynamo-operator-origin-version": AdmissionSettings().operator_version,
            },
        },
        {"op": "add", "path": "/spec/components/0/minAvailable", "value": 1},
        {"op": "add", "path": "/spec/components/1/minAvailable", "value": 1},
    ]


async def test_an_invalid_create_is_refused_with_every_error_as_the_api_server_words_it(
    issued: certificates.Certificates,
) -> None:
    # given a DGD that sets a restart on create and has two components named alike but for case
    dgd = example()
    dgd["spec"]["restart"] = {"id": "now"}
    first = dgd["spec"]["components"][0]
    dgd["spec"]["components"].append({**first, "name": first["name"].upper()})

    async with serving(issued) as (url, _):
        status, answer = await post(url + VALIDATE, issued.ca_cert, json.dumps(review(dgd)).encode())

    # then it is refused as invalid (422), every error at once, one cause per field
    response = answer["response"]
    assert status == 200 and response["allowed"] is False
    assert (response["status"]["code"], response["status"]["reason"]) == (422, "Invalid")
    message = response["status"]["message"]
    assert message.startswith(f'DynamoGraphDeployment.nvidia.com "{dgd["metadata"]["name"]}" is invalid: [')
    assert (
        "spec.restart must be unset on create; set spec.restart.id after creation to request a restart"
        in message
    )
    fields = [cause["field"] for cause in response["status"]["details"]["causes"]]
    assert sorted(fields) == sorted(
        ["spec.restart", f"spec.components[{len(dgd['spec']['components']) - 1}].name"]
    )


async def test_a_request_that_does_not_come_as_v1beta1_is_refused_naming_the_misconfiguration(
    issued: certificates.Certificates,
) -> None:
    async with serving(issued) as (url, _):
        _, answer = await post(
            url + VALIDATE, issued.ca_cert, json.dumps(review(example(), version="v1alpha1")).encode()
        )

    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"] == (
        "admission requires nvidia.com/v1beta1, Kind=DynamoGraphDeployment, got nvidia.com/v1alpha1, "
        "Kind=DynamoGraphDeployment; check webhook and CRD conversion configuration"
    )


async def test_a_body_that_is_not_a_review_gets_400_and_one_too_large_413(
    issued: certificates.Certificates,
) -> None:
    async with serving(issued) as (url, _):
        garbage = await post(url + VALIDATE, issued.ca_cert, b"{not json")
        no_request = await post(
            url + VALIDATE,
            issued.ca_cert,
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
        )
        too_large = await post(url + VALIDATE, issued.ca_cert, b" " * (MAX_BODY + 1))
        still_serving = await post(url + MUTATE, issued.ca_cert, json.dumps(review(example())).encode())

    assert garbage[0] == 400 and "not a v1 AdmissionReview" in garbage[1]
    assert no_request[0] == 400 and "it has no request" in no_request[1]
    assert too_large[0] == 413
    assert still_serving[0] == 200


async def test_a_handler_that_raises_answers_a_refusal_and_the_server_goes_on(
    issued: certificates.Certificates,
) -> None:
    def broken(request: AdmissionRequest, settings: AdmissionSettings) -> AdmissionResponse:
        raise KeyError("components")

    async with serving(issued, {**ADMISSION_PATHS, "/broken": broken}) as (url, _):
        _, failed = await post(url + "/broken", issued.ca_cert, json.dumps(review(example())).encode())
        status, _ = await post(url + MUTATE, issued.ca_cert, json.dumps(review(example())).encode())

    assert failed["response"]["allowed"] is False
    assert failed["response"]["status"]["code"] == 500
    assert "KeyError" not in failed["response"]["status"]["message"]
    assert status == 200


async def test_a_new_certificate_is_served_to_the_next_connection_without_a_restart(
    issued: certificates.Certificates,
) -> None:
    renewed = certificates.serving(issued.ca_cert, issued.ca_key, ["localhost"], ["127.0.0.1"], now=NOW)

    async def served_serial(url: str) -> int:
        port = int(url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port, ssl_context=trusting(issued.ca_cert)) as stream:
            der = stream.extra(anyio.streams.tls.TLSAttribute.peer_certificate_binary)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number

    async with serving(issued) as (url, tls):
        before = await served_serial(url)
        assert tls.load(renewed.cert, renewed.key) and not tls.load(renewed.cert, renewed.key)
        after = await served_serial(url)

    assert before == x509.load_pem_x509_certificate(issued.cert).serial_number
    assert after == x509.load_pem_x509_certificate(renewed.cert).serial_number


def test_the_server_speaks_tls_1_2_or_later_only() -> None:
    tls = TLS()
    try:
        assert tls.context.minimum_version == ssl.TLSVersion.TLSv1_2
    finally:
        tls.close()


def test_the_operators_certificate_names_the_service_and_the_address() -> None:
    issued = certificates.issue(
        ["dgd-operator-webhook.dynamo-system.svc", "dgd-operator-webhook.dynamo-system.svc.cluster.local"],
        ["10.0.0.7"],
        now=NOW,
    )
    cert = x509.load_pem_x509_certificate(issued.cert)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "dgd-operator-webhook.dynamo-system.svc",
        "dgd-operator-webhook.dynamo-system.svc.cluster.local",
    ]
    assert [str(a) for a in names.get_values_for_type(x509.IPAddress)] == ["10.0.0.7"]
    ca = x509.load_pem_x509_certificate(issued.ca_cert)
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


async def test_conversion_converts_every_object_and_names_the_one_it_cannot(
    issued: certificates.Certificates,
) -> None:
    alpha = yaml.safe_load((EXAMPLE.parent / "disagg-v1alpha1.yaml").read_text())

    def conversion(objects: list[dict[str, Any]], to: str) -> bytes:
        review = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "c-1", "desiredAPIVersion": to, "objects": objects},
            # as the API server sends it: Go encodes the empty response too
            "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}, "status": ""}},
        }
        return json.dumps(review).encode()

    tls = TLS()
    tls.load(issued.cert, issued.key)
    app = webhook_app(AdmissionSettings(), converter=CONVERTER)
    server = await Server.start(app, "127.0.0.1", 0, tls=tls.context)
    try:
        url = f"https://127.0.0.1:{server.port}/convert"
        _, up = await post(url, issued.ca_cert, conversion([alpha], "nvidia.com/v1beta1"))
        (beta,) = up["response"]["convertedObjects"]
        _, down = await post(url, issued.ca_cert, conversion([beta], "nvidia.com/v1alpha1"))
        _, failed = await post(
            url,
            issued.ca_cert,
            conversion(
                [beta, {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}}], "nvidia.com/v1alpha1"
            ),
        )
    finally:
        await server.stop()
        tls.close()

    # then a v1alpha1 DGD comes up as v1beta1 components and back as the same services
    assert (up["kind"], up["response"]["uid"], up["response"]["result"]) == (
        "ConversionReview",
        "c-1",
        {"status": "Success"},
    )
    assert beta["apiVersion"] == "nvidia.com/v1beta1"
    assert sorted(c["name"] for c in beta["spec"]["components"]) == sorted(alpha["spec"]["services"])
    (back,) = down["response"]["convertedObjects"]
    assert (
        back["apiVersion"] == "nvidia.com/v1alpha1"
        and back["spec"]["services"].keys() == alpha["spec"]["services"].keys()
    )
    # and a review with an object that cannot be converted fails whole, naming it
    assert failed["response"]["result"]["status"] == "Failure"
    assert failed["response"]["result"]["message"].startswith(
        "Pod p cannot be converted to nvidia.com/v1alpha1: kind:"
    )
    assert "convertedObjects" not in failed["response"]
