"""Admission's live cluster lookups as pure rules (supplement §4.4 item 7 first bullet, items 12.4 and
13): every message, and when each rule applies (Grove pathway, create only, looked up at all)."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from dgd.domain.admission.lookups import BindingRead, ClusterLookups, Wanted, wanted
from dgd.domain.admission.update import validate_update
from dgd.domain.admission.validation import admit
from dgd.messages.dgd import DynamoGraphDeployment
from tests.unit.manifests import EPP_CONFIG_MAP_REF

# A binding's levels, broad to narrow (the real CRD: grove.io_clustertopologybindings.yaml).
LEVELS = BindingRead(levels=("zone", "rack", "host"))
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"


def _dgd(**spec: Any) -> dict[str, Any]:
    worker = {
        "name": "decode",
        "type": "decode",
        "podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}},
    }
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph", "namespace": "demo"},
        "spec": {"backendFramework": "vllm", "components": [worker], **spec},
    }


def _epp() -> dict[str, Any]:
    document = _dgd()
    document["spec"]["components"].append(copy.deepcopy(EPP_CONFIG_MAP_REF))
    return document


def _errors(document: dict[str, Any], lookups: ClusterLookups | None) -> list[str]:
    return [str(e) for e in admit(document, lookups=lookups).errors]


POOL_MISSING = (
    "spec.components[1].type: cannot deploy EPP component: InferencePool API group "
    "(inference.networking.k8s.io) is not available in the cluster; install the Gateway API Inference "
    "Extension before deploying EPP components"
)


def test_an_epp_component_is_refused_when_the_inference_pool_api_is_not_served() -> None:
    # given an EPP DGD, and the cluster not serving inference.networking.k8s.io (§4.4 item 7, first bullet)
    lookups = ClusterLookups(inference_pool=False)

    # when admitted, then the EPP component's type is refused with upstream's sentence
    assert _errors(_epp(), lookups) == [POOL_MISSING]
    # and served, or not looked up (offline), it is admitted
    assert _errors(_epp(), ClusterLookups(inference_pool=True)) == []
    assert _errors(_epp(), None) == []


def test_a_failed_inference_pool_check_refuses_with_the_reason() -> None:
    errors = _errors(_epp(), ClusterLookups(inference_pool="discovery timed out"))
    assert errors == [
        "spec.components[1].type: cannot deploy EPP component: failed to check whether the InferencePool "
        "API group (inference.networking.k8s.io) is served: discovery timed out"
    ]


@pytest.mark.parametrize(
    ("read", "message"),
    [
        # §4.4 item 12.4: "missing -> references a ClusterTopologyBinding resource that was not found"
        (BindingRead(), '"gb200" references a ClusterTopologyBinding resource that was not found'),
        # "other read errors -> failed to read ClusterTopologyBinding: <err>"
        (
            BindingRead(error="Forbidden (403)"),
            '"gb200": failed to read ClusterTopologyBinding: Forbidden (403)',
        ),
    ],
)
def test_a_topology_constraint_naming_a_missing_or_unreadable_binding_is_refused(
    read: BindingRead, message: str
) -> None:
    document = _dgd(topologyConstraint={"clusterTopologyName": "gb200", "packDomain": "rack"})
    errors = _errors(document, ClusterLookups(bindings={"gb200": read}))
    assert errors == [f"spec.topologyConstraint.clusterTopologyName: {message}"]


def test_pack_domains_must_be_levels_of_the_binding_and_components_no_broader() -> None:
    # given a spec packDomain not in the binding, a component packDomain not in it, and one broader
    document = _dgd(topologyConstraint={"clusterTopologyName": "gb200", "packDomain": "block"})
    first = document["spec"]["components"][0]
    first["topologyConstraint"] = {"packDomain": "numa"}
    narrow = _dgd(topologyConstraint={"clusterTopologyName": "gb200", "packDomain": "rack"})
    narrow["spec"]["components"][0]["topologyConstraint"] = {"packDomain": "zone"}
    lookups = ClusterLookups(bindings={"gb200": LEVELS})

    # then each is refused at its field; the domains are listed sorted (§4.4 item 12.4, and upstream's
    # webhook test "available domains: [rack zone]"); the component message names "ClusterTopology"
    assert _errors(document, lookups) == [
        'spec.components[0].topologyConstraint.packDomain: "numa" does not exist in ClusterTopology "gb200"; '
        "available domains: [host rack zone]",
        'spec.topologyConstraint.packDomain: "block" does not exist in ClusterTopologyBinding "gb200"; '
        "available domains: [host rack zone]",
    ]
    assert _errors(narrow, lookups) == [
        'spec.components[0].topologyConstraint.packDomain: "zone" must be equal to or narrower than the '
        'deployment-level domain "rack"'
    ]


def test_a_kv_transfer_domain_must_be_a_level_of_its_binding() -> None:
    # §4.4 item 13: "domain must be a level -> does not exist in ClusterTopologyBinding"
    policy = {"clusterTopologyName": "gb200", "domain": "numa"}
    document = _dgd(experimental={"kvTransferPolicy": policy})
    assert _errors(document, ClusterLookups(bindings={"gb200": LEVELS})) == [
        'spec.experimental.kvTransferPolicy.domain: "numa" does not exist in ClusterTopologyBinding "gb200"; '
        "available domains: [host rack zone]"
    ]
    assert _errors(document, ClusterLookups(bindings={"gb200": BindingRead()})) == [
        'spec.experimental.kvTransferPolicy.clusterTopologyName: "gb200" references a ClusterTopologyBinding '
        "resource that was not found"
    ]
    policy["domain"] = "rack"
    assert _errors(document, ClusterLookups(bindings={"gb200": LEVELS})) == []


def test_binding_rules_apply_only_on_grove_and_on_create() -> None:
    # given a DGD naming a missing binding
    missing = ClusterLookups(bindings={"gb200": BindingRead()})
    document = _dgd(topologyConstraint={"clusterTopologyName": "gb200", "packDomain": "rack"})

    # when it is on the Component pathway, or already past its first generation
    component = copy.deepcopy(document)
    component["metadata"]["annotations"] = {"nvidia.com/enable-grove": "false"}
    later = copy.deepcopy(document)
    later["metadata"]["generation"] = 2

    # then the lookup rules do not refuse it (supplement §0: the Component pathway only skips the lookup)
    assert _errors(component, missing) == []
    assert _errors(later, missing) == []
    assert _errors(document, missing) != []


def test_wanted_names_only_what_the_rules_read_and_only_valid_names() -> None:
    document = _epp()
    document["spec"]["topologyConstraint"] = {"clusterTopologyName": "gb200", "packDomain": "rack"}
    document["spec"]["experimental"] = {
        "kvTransferPolicy": {"clusterTopologyName": "gb200", "domain": "rack"}
    }
    assert wanted(document) == Wanted(inference_pool=True, bindings=("gb200",))
    document["spec"]["experimental"]["kvTransferPolicy"]["clusterTopologyName"] = "../secrets"
    assert wanted(document) == Wanted(inference_pool=True, bindings=("gb200",))
    assert wanted(_dgd()) == Wanted(inference_pool=False, bindings=())
    assert wanted("junk") == Wanted(inference_pool=False, bindings=())


def test_an_update_is_checked_with_the_lookups_too_the_bindings_only_at_generation_one() -> None:
    # given a stored EPP DGD naming a binding, and an update of it (upstream runs the same spec rules
    # on update, the binding lookup gated on generation <= 1)
    old = _epp()
    old["metadata"]["annotations"] = {"nvidia.com/workload-provider": "grove"}
    old["spec"]["topologyConstraint"] = {"clusterTopologyName": "gb200", "packDomain": "rack"}
    stored = msgspec.convert(old, DynamoGraphDeployment)
    lookups = ClusterLookups(inference_pool=False, bindings={"gb200": BindingRead()})

    def errors(generation: int) -> list[str]:
        new = copy.deepcopy(old)
        new["metadata"]["generation"] = generation
        verdict = validate_update(
            stored,
            msgspec.convert(new, DynamoGraphDeployment),
            requester=None,
            operator_principal=None,
            grove_enabled=True,
            lookups=lookups,
        )
        return [str(e) for e in verdict.errors]

    # then at generation 1 both the InferencePool and the binding rules refuse, later only the first
    assert errors(1) == [
        POOL_MISSING,
        'spec.topologyConstraint.clusterTopologyName: "gb200" references a ClusterTopologyBinding resource '
        "that was not found",
    ]
    assert errors(2) == [POOL_MISSING]
