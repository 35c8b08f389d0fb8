"""DynamoComponentDeployments on the Component pathway (dgd-domain §8.3, podspec §6.1)."""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.render.dcd import render_dcds
from dgd.domain.render.template_defaults import graph_backend
from dgd.messages.dgd import DynamoGraphDeployment

HASH = "0123abcd"


def _dgd(*components: dict[str, Any], name: str = "graph", **spec: Any) -> DynamoGraphDeployment:
    document = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name, "namespace": "ns", "annotations": {"nvidia.com/enable-grove": "false"}},
        "spec": {"components": list(components), **spec},
    }
    return default_in_memory(msgspec.convert(document, DynamoGraphDeployment), grove_enabled=True)


def _component(name: str, type_: str, **fields: Any) -> dict[str, Any]:
    main = {"name": "main", "image": "img:1.4.0", **fields.pop("main", {})}
    template = {"spec": {"containers": [main]}, **fields.pop("template", {})}
    return {"name": name, "type": type_, "podTemplate": template, **fields}


def test_worker_dcd_carries_the_hash_in_name_and_labels_and_others_do_not() -> None:
    # given a frontend and a worker whose template has a user label
    worker = _component("Worker", "worker", template={"metadata": {"labels": {"team": "a"}}})
    dgd = _dgd(_component("Frontend", "frontend"), worker, labels={"graph": "g"})

    # when the DCDs are rendered
    frontend, rendered = render_dcds(dgd, worker_hash=HASH)

    # then names are lower-case, the worker's suffixed; object labels are the user's + identity labels
    assert (frontend.metadata.name, rendered.metadata.name) == ("graph-frontend", f"graph-worker-{HASH}")
    assert rendered.metadata.labels == {
        "nvidia.com/dynamo-component": "Worker",
        "nvidia.com/dynamo-graph-deployment-name": "graph",
        "nvidia.com/dynamo-namespace": "ns-graph",
        "nvidia.com/dynamo-worker-hash": HASH,
        "team": "a",
    }
    assert "nvidia.com/dynamo-worker-hash" not in (frontend.metadata.labels or {})
    # and the pod template gets the graph labels as low-priority defaults, plus the hash
    pod_labels = (rendered.spec.pod_template or {})["metadata"]["labels"]
    assert pod_labels == {"graph": "g", "team": "a", "nvidia.com/dynamo-worker-hash": HASH}


def test_over_long_worker_dcd_names_are_shortened_keeping_the_hash() -> None:
    # given a DGD and component name that together exceed 63 characters
    dgd = _dgd(_component("w" * 40, "worker"), name="g" * 40)

    # when rendered
    (dcd,) = render_dcds(dgd, worker_hash=HASH)

    # then the name is at most 63 characters, ends with the hash, and is stable
    name = dcd.metadata.name or ""
    assert len(name) == 63
    assert name.endswith(f"-{HASH}")
    assert name == (render_dcds(dgd, worker_hash=HASH)[0].metadata.name)


def test_graph_env_is_baked_under_component_env() -> None:
    # given graph env and a component that overrides one name
    worker = _component("w", "worker", main={"env": [{"name": "B", "value": "mine"}]})
    dgd = _dgd(worker, env=[{"name": "B", "value": "graph"}, {"name": "A", "value": "1"}])

    # when rendered
    (dcd,) = render_dcds(dgd, worker_hash=HASH)

    # then the main container env is merged, sorted, component first
    assert (dcd.spec.pod_template or {})["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "mine"},
    ]


def test_rollout_replicas_restart_stamp_and_gate_are_applied() -> None:
    # given a worker with 4 replicas and a frontend
    dgd = _dgd(_component("Frontend", "frontend"), _component("w", "worker", replicas=4))

    # when rendered with a rollout target, a restart stamp and the frontend gated
    frontend, worker = render_dcds(
        dgd, worker_hash=HASH, replicas={"w": 2}, restart_at={"w": "r1"}, gated=frozenset({"Frontend"})
    )

    # then the worker runs the target with the stamp; the gated frontend runs nothing
    assert worker.spec.replicas == 2
    assert (worker.spec.pod_template or {})["metadata"]["annotations"]["nvidia.com/restartAt"] == "r1"
    assert frontend.spec.replicas == 0


def test_planner_gets_its_account_and_epp_opts_out_of_istio_injection() -> None:
    # given a planner and an EPP in the graph with a worker
    epp = _component("epp", "epp", eppConfig={"configMapRef": {"name": "c", "key": "k"}})
    dgd = _dgd(_component("planner", "planner"), epp, _component("w", "worker"))

    # when rendered
    planner, rendered_epp, worker = render_dcds(dgd, worker_hash=HASH)

    # then each gets its pathway-specific defaults, and workers are classed for the EPP
    assert (planner.spec.pod_template or {})["spec"]["serviceAccountName"] == "planner-serviceaccount"
    assert (rendered_epp.spec.pod_template or {})["metadata"]["annotations"][
        "sidecar.istio.io/inject"
    ] == "false"
    assert (worker.metadata.labels or {})["nvidia.com/dynamo-component-class"] == "worker"


def test_backend_framework_is_detected_from_workers_when_the_graph_has_none() -> None:
    # given no graph backend and one worker running dynamo.sglang
    worker = _component("w", "worker", main={"command": ["python3", "-m", "dynamo.sglang"]})
    dgd = _dgd(_component("Frontend", "frontend"), worker)

    # when rendered
    frontend, rendered = render_dcds(dgd, worker_hash=HASH)

    # then every DCD, the frontend too, carries the detected framework
    assert graph_backend(dgd) == "sglang"
    assert (frontend.spec.backend_framework, rendered.spec.backend_framework) == ("sglang", "sglang")


def test_every_dcd_carries_the_v1alpha1_preservation_payload() -> None:
    # given any component
    (dcd,) = render_dcds(_dgd(_component("Frontend", "frontend")), worker_hash=HASH)

    # then its v1alpha1 view is recorded as upstream does (empty serviceName)
    assert (dcd.metadata.annotations or {})["nvidia.com/dcd-spec"] == (
        '{"version":1,"spec":{},"rawJSON":[{"path":"serviceName","nil":true}]}'
    )
