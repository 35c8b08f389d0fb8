"""GPUs of a container, scalar or through DRA claims (podspec §2; upstream ``internal/dra``
``ResolveGPUCount``, ``gpuCountFromDeviceRequest``, ``exactDeviceCount`` and their tests)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from dgd.domain.render.errors import RenderError
from dgd.domain.render.gpu_count import container_gpus


def _template(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": list(requests)}}},
    }


def _exactly(name: str, device_class: str, count: int | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class, "allocationMode": "ExactCount"}
    if count is not None:
        exactly["count"] = count
    return {"name": name, "exactly": exactly}


POD_CLAIMS = [{"name": "gpus", "resourceClaimTemplateName": "four-gpus"}]
CLAIMING = {"name": "main", "resources": {"claims": [{"name": "gpus"}]}}


def test_scalar_gpus_win_over_claims() -> None:
    # given a container with both a scalar GPU limit and a claim
    container = {
        "name": "main",
        "resources": {"limits": {"nvidia.com/gpu": "2"}, "claims": [{"name": "gpus"}]},
    }

    # then its scalar count is taken without reading any template (upstream: scalar precedence)
    assert container_gpus(container, pod_claims=POD_CLAIMS, templates={}) == 2


def test_a_claim_counts_the_gpu_devices_of_its_template() -> None:
    # given a container whose claim is made from a template asking for 4 GPUs and a NIC
    templates = {
        "four-gpus": _template("four-gpus", _exactly("g", "gpu.nvidia.com", 4), _exactly("n", "nic.example"))
    }

    # then the GPU request counts and the NIC request does not
    assert container_gpus(CLAIMING, pod_claims=POD_CLAIMS, templates=templates) == 4


def test_an_exact_request_without_a_count_is_one_device() -> None:
    # given a GPU request with no count (the API server defaults it to 1)
    templates = {"four-gpus": _template("four-gpus", _exactly("g", "gpu.intel.com"))}

    # then it counts one device
    assert container_gpus(CLAIMING, pod_claims=POD_CLAIMS, templates=templates) == 1


def test_a_claim_naming_one_request_counts_only_that_request() -> None:
    # given a template with two GPU requests and a container claiming only the second
    templates = {
        "four-gpus": _template(
            "four-gpus", _exactly("a", "gpu.nvidia.com", 4), _exactly("b", "gpu.nvidia.com", 2)
        )
    }
    container = {"name": "main", "resources": {"claims": [{"name": "gpus", "request": "b"}]}}

    # then only that request's devices count
    assert container_gpus(container, pod_claims=POD_CLAIMS, templates=templates) == 2


def test_first_available_gpu_alternatives_must_agree_on_the_count() -> None:
    # given a request whose GPU alternatives ask for different counts
    request = {
        "name": "g",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 8},
            {
                "name": "small",
                "deviceClassName": "gpu.nvidia.com",
                "allocationMode": "ExactCount",
                "count": 4,
            },
        ],
    }
    templates = {"four-gpus": _template("four-gpus", request)}

    # then the count is refused, naming the request
    with pytest.raises(RenderError, match="request 'g' has GPU alternatives with different counts"):
        container_gpus(CLAIMING, pod_claims=POD_CLAIMS, templates=templates)


@pytest.mark.parametrize(
    ("pod_claims", "templates", "message"),
    [
        ([], {}, "the container claim 'gpus' has no matching pod resourceClaims entry"),
        (POD_CLAIMS, {}, "ResourceClaimTemplate 'four-gpus' does not exist in the namespace"),
        (
            [{"name": "gpus", "resourceClaimName": "shared"}],
            {},
            "pod resourceClaim 'gpus' must name a resourceClaimTemplateName",
        ),
        (
            POD_CLAIMS,
            {
                "four-gpus": _template(
                    "four-gpus",
                    {"name": "g", "exactly": {"deviceClassName": "gpu.x", "allocationMode": "All"}},
                )
            },
            "allocationMode 'All' has no fixed GPU count",
        ),
    ],
)
def test_a_claim_that_cannot_be_counted_is_refused_saying_why(
    pod_claims: list[dict[str, Any]], templates: dict[str, Any], message: str
) -> None:
    # given a claim that cannot be resolved to a number of GPUs
    # then counting refuses it, naming the main container's claim and the reason
    with pytest.raises(RenderError, match=re.escape("containers[main].resources.claims[gpus]")) as refused:
        container_gpus(CLAIMING, pod_claims=pod_claims, templates=templates)
    assert message in str(refused.value)
