"""The PodCliqueSet: cliques, scaling groups, labels, and what the existing one changes (dgd-domain §9.3)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from msgspec import structs

from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.render.errors import RenderError
from dgd.domain.render.pcs import render_pcs
from dgd.domain.render.provider_overrides import apply_provider_overrides
from dgd.domain.worker_hash import worker_hash
from dgd.messages.config import GateConfig, OperatorConfig, OrchestratorsConfig
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet, TopologyConstraint

CONFIG = OperatorConfig()


def _dgd(
    *components: dict[str, Any], annotations: dict[str, str] | None = None, **spec: Any
) -> DynamoGraphDeployment:
    metadata: dict[str, Any] = {"name": "graph", "namespace": "ns"}
    if annotations:
        metadata["annotations"] = annotations
    document = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": metadata,
        "spec": {"components": list(components), **spec},
    }
    return default_in_memory(msgspec.convert(document, DynamoGraphDeployment), grove_enabled=True)


def _component(name: str, type_: str, **fields: Any) -> dict[str, Any]:
    image = {"name": "main", "image": "img:1.4.0", **fields.pop("main", {})}
    return {"name": name, "type": type_, "podTemplate": {"spec": {"containers": [image]}}, **fields}


FRONTEND = _component("Frontend", "frontend")
DECODE = _component("decode", "decode", replicas=3)
PREFILL_MN = _component("prefill", "prefill", multinode={"nodeCount": 3}, replicas=2)


def _cliques(pcs: PodCliqueSet) -> dict[str, Any]:
    return {c.name: c for c in pcs.spec.template.cliques}


def test_components_become_cliques_in_order_and_multinode_ones_a_scaling_group() -> None:
    # given a frontend, a 3-replica decode and a 3-node prefill with 2 replicas
    dgd = _dgd(FRONTEND, DECODE, PREFILL_MN, backendFramework="vllm")

    # when the PodCliqueSet is rendered
    pcs = render_pcs(dgd, config=CONFIG, existing=None)

    # then cliques follow component then role order, with replicas and minAvailable per role
    cliques = pcs.spec.template.cliques
    assert [(c.name, c.spec.replicas, c.spec.min_available) for c in cliques] == [
        ("frontend", 1, 1),
        ("decode", 3, 1),
        ("prefill-ldr", 1, 1),
        ("prefill-wkr", 2, 2),
    ]
    groups = pcs.spec.template.pod_clique_scaling_groups or []
    assert [(g.name, g.clique_names, g.replicas, g.min_available) for g in groups] == [
        ("prefill", ["prefill-ldr", "prefill-wkr"], 2, 1)
    ]
    assert pcs.spec.template.clique_startup_type == "CliqueStartupTypeAnyOrder"
    assert pcs.spec.template.termination_delay == "15m0s"


def test_clique_labels_keep_system_labels_over_user_labels() -> None:
    # given graph and pod-template labels that try to override the selector and component
    decode = _component("decode", "decode")
    decode["podTemplate"]["metadata"] = {"labels": {"nvidia.com/selector": "x", "team": "a"}}
    dgd = _dgd(decode, labels={"nvidia.com/dynamo-component": "y", "team": "graph", "env": "prod"})

    # when rendered
    labels = _cliques(render_pcs(dgd, config=CONFIG, existing=None))["decode"].labels

    # then user labels are there with pod-template precedence, but system labels win
    assert labels["nvidia.com/selector"] == "graph-decode"
    assert labels["nvidia.com/dynamo-component"] == "decode"
    assert (labels["team"], labels["env"]) == ("a", "prod")
    assert labels["nvidia.com/dynamo-sub-component-type"] == "decode"
    assert labels["nvidia.com/dynamo-worker-hash"] == worker_hash(dgd)


def test_metrics_label_is_dropped_when_the_graph_disables_metrics() -> None:
    dgd = _dgd(FRONTEND, annotations={"nvidia.com/enable-metrics": "false"})
    labels = _cliques(render_pcs(dgd, config=CONFIG, existing=None))["frontend"].labels
    assert "nvidia.com/metrics-enabled" not in (labels or {})


def test_trtllm_multinode_leader_starts_after_its_workers() -> None:
    # given a TRT-LLM multinode worker
    dgd = _dgd(_component("w", "worker", multinode={"nodeCount": 2}), backendFramework="trtllm")

    # when rendered
    pcs = render_pcs(dgd, config=CONFIG, existing=None)

    # then the leader waits for the worker clique and startup becomes explicit
    assert _cliques(pcs)["w-ldr"].spec.starts_after == ["w-wkr"]
    assert _cliques(pcs)["w-wkr"].spec.starts_after is None
    assert pcs.spec.template.clique_startup_type == "CliqueStartupTypeExplicit"


def test_existing_replicas_and_order_are_kept_and_new_items_go_last() -> None:
    # given an existing PodCliqueSet rendered before, then scaled and reordered by others
    before = render_pcs(_dgd(DECODE, PREFILL_MN), config=CONFIG, existing=None)
    template = before.spec.template
    scaled = [
        structs.replace(c, spec=structs.replace(c.spec, replicas=7)) for c in reversed(template.cliques)
    ]
    groups = [structs.replace(g, replicas=5) for g in template.pod_clique_scaling_groups or []]
    existing = structs.replace(
        before,
        spec=structs.replace(
            before.spec, template=structs.replace(template, cliques=scaled, pod_clique_scaling_groups=groups)
        ),
    )

    # when a DGD with a new frontend is rendered against it
    pcs = render_pcs(_dgd(FRONTEND, DECODE, PREFILL_MN), config=CONFIG, existing=existing)

    # then existing order and standalone/group replicas are kept; grouped cliques keep role replicas
    assert [(c.name, c.spec.replicas) for c in pcs.spec.template.cliques] == [
        ("prefill-wkr", 2),
        ("prefill-ldr", 1),
        ("decode", 7),
        ("frontend", 1),
    ]
    assert [g.replicas for g in pcs.spec.template.pod_clique_scaling_groups or []] == [5]


def test_gated_components_stay_at_zero_replicas_despite_the_existing_ones() -> None:
    # given an existing PodCliqueSet with 3 decode replicas
    existing = render_pcs(_dgd(DECODE), config=CONFIG, existing=None)

    # when decode waits for a checkpoint
    pcs = render_pcs(_dgd(DECODE), config=CONFIG, existing=existing, gated=frozenset({"decode"}))

    # then its clique is at 0
    assert _cliques(pcs)["decode"].spec.replicas == 0


def test_legacy_pcs_stays_unsuffixed_until_the_worker_generation_changes() -> None:
    # given an existing PodCliqueSet whose worker clique has no worker hash (made by an older operator)
    dgd = _dgd(DECODE)
    fresh = render_pcs(dgd, config=CONFIG, existing=None)
    clique = fresh.spec.template.cliques[0]
    legacy_labels = {k: v for k, v in (clique.labels or {}).items() if k != "nvidia.com/dynamo-worker-hash"}
    legacy = structs.replace(
        fresh,
        spec=structs.replace(
            fresh.spec,
            template=structs.replace(
                fresh.spec.template, cliques=[structs.replace(clique, labels=legacy_labels)]
            ),
        ),
    )

    # when rendered against it, without and with a worker generation change
    kept = _cliques(render_pcs(dgd, config=CONFIG, existing=legacy))["decode"]
    changed = _cliques(render_pcs(dgd, config=CONFIG, existing=legacy, worker_generation_changed=True))[
        "decode"
    ]

    # then the suffix (label and env) appears only with the change
    def suffix(c: Any) -> list[str]:
        return [
            e["value"]
            for e in c.spec.pod_spec["containers"][0]["env"]
            if e["name"] == "DYN_NAMESPACE_WORKER_SUFFIX"
        ]

    assert "nvidia.com/dynamo-worker-hash" not in (kept.labels or {})
    assert suffix(kept) == []
    assert changed.labels["nvidia.com/dynamo-worker-hash"] == worker_hash(dgd)
    assert suffix(changed) == [worker_hash(dgd)]


def test_legacy_worker_selector_is_kept_for_existing_cliques() -> None:
    # given an existing clique selecting decode pods as component-type worker
    dgd = _dgd(DECODE)
    fresh = render_pcs(dgd, config=CONFIG, existing=None)
    clique = fresh.spec.template.cliques[0]
    labels = {**(clique.labels or {}), "nvidia.com/dynamo-component-type": "worker"}
    existing = structs.replace(
        fresh,
        spec=structs.replace(
            fresh.spec,
            template=structs.replace(fresh.spec.template, cliques=[structs.replace(clique, labels=labels)]),
        ),
    )

    # when rendered against it
    rendered = _cliques(render_pcs(dgd, config=CONFIG, existing=existing))["decode"]

    # then the clique and its pods still say worker, with the sub-type label
    assert rendered.labels["nvidia.com/dynamo-component-type"] == "worker"
    assert rendered.labels["nvidia.com/dynamo-sub-component-type"] == "decode"
    env = {e["name"]: e.get("value") for e in rendered.spec.pod_spec["containers"][0]["env"]}
    assert env["DYN_COMPONENT"] == "worker"


def test_restart_stamps_are_carried_unless_a_new_one_is_given() -> None:
    # given an existing PodCliqueSet whose frontend clique was restarted
    dgd = _dgd(FRONTEND, DECODE)
    existing = render_pcs(dgd, config=CONFIG, existing=None, restart_at={"Frontend": "r1", "decode": "r1"})

    # when rendered with a new stamp for decode only
    pcs = render_pcs(dgd, config=CONFIG, existing=existing, restart_at={"decode": "r2"})

    # then frontend keeps r1 and decode gets r2
    assert _cliques(pcs)["frontend"].annotations["nvidia.com/restartAt"] == "r1"
    assert _cliques(pcs)["decode"].annotations["nvidia.com/restartAt"] == "r2"


def test_topology_constraints_go_to_the_set_and_standalone_cliques() -> None:
    # given graph-level packing on a topology and a component packing narrower
    dgd = _dgd(
        _component("decode", "decode", topologyConstraint={"packDomain": "rack"}),
        topologyConstraint={"clusterTopologyName": "topo", "packDomain": "zone"},
    )

    # when rendered
    template = render_pcs(dgd, config=CONFIG, existing=None).spec.template

    # then the set names the topology and the clique inherits it
    assert msgspec.to_builtins(template.topology_constraint) == {
        "topologyName": "topo",
        "pack": {"required": "zone"},
    }
    assert msgspec.to_builtins(template.cliques[0].topology_constraint) == {"pack": {"required": "rack"}}


def test_grove_update_strategy_comes_from_the_annotation_and_bad_values_are_refused() -> None:
    dgd = _dgd(FRONTEND, annotations={"nvidia.com/grove-update-strategy": "OnDelete"})
    assert render_pcs(dgd, config=CONFIG, existing=None).spec.update_strategy.type == "OnDelete"  # type: ignore[union-attr]
    with pytest.raises(RenderError, match="grove-update-strategy"):
        render_pcs(
            _dgd(FRONTEND, annotations={"nvidia.com/grove-update-strategy": "Fast"}),
            config=CONFIG,
            existing=None,
        )


def test_volcano_gate_schedules_pods_with_volcano_and_names_the_queue() -> None:
    # given the Volcano gate on and a queue annotation
    config = OperatorConfig(orchestrators=OrchestratorsConfig(volcano_scheduler=GateConfig(enabled=True)))
    dgd = _dgd(FRONTEND, annotations={"nvidia.com/volcano-queue": "q"})

    # when rendered
    pcs = render_pcs(dgd, config=config, existing=None)

    # then pods use volcano and the set carries the queue
    assert pcs.spec.template.cliques[0].spec.pod_spec["schedulerName"] == "volcano"
    assert pcs.metadata.annotations == {"scheduling.grove.io/volcano-queue": "q"}


def test_provider_overrides_replace_topology_subtrees() -> None:
    # given overrides on the set and on a multinode worker role
    override = {"apiVersion": "grove.io/v1alpha1", "target": "PodCliqueSet"}
    root_value = {
        "spec": {"template": {"topologyConstraint": {"topologyName": "t", "pack": {"preferred": "host"}}}}
    }
    role_value = {"topologyConstraint": {"pack": {"required": "host"}}}
    worker = _component(
        "w",
        "worker",
        multinode={
            "nodeCount": 2,
            "worker": {"providerOverride": {"apiVersion": "grove.io/v1alpha1", "value": role_value}},
        },
    )
    dgd = _dgd(worker, providerOverride={**override, "value": root_value})

    # when rendered and the overrides applied
    pcs = apply_provider_overrides(msgspec.to_builtins(render_pcs(dgd, config=CONFIG, existing=None)), dgd)

    # then exactly those subtrees are the overrides' values
    template = pcs["spec"]["template"]
    assert template["topologyConstraint"] == {"topologyName": "t", "pack": {"preferred": "host"}}
    assert [c.get("topologyConstraint") for c in template["cliques"]] == [
        None,
        {"pack": {"required": "host"}},
    ]


def test_long_dgd_name_is_shortened_within_the_grove_budget() -> None:
    # given a DGD name longer than the 45-character budget leaves
    dgd = _dgd(DECODE)
    long = structs.replace(dgd, metadata=structs.replace(dgd.metadata, name="a" * 50))

    # when rendered
    name = render_pcs(long, config=CONFIG, existing=None).metadata.name or ""

    # then the name fits with a 4-hex suffix
    assert len(name) == 45 - len("decode")
    assert name.startswith("a" * 34 + "-")


def test_legacy_pack_domain_is_kept_one_more_time_when_a_topology_name_arrives() -> None:
    # given an existing PodCliqueSet whose clique still uses Grove's legacy packDomain
    dgd = _dgd(
        _component("decode", "decode", topologyConstraint={"packDomain": "rack"}),
        topologyConstraint={"clusterTopologyName": "topo"},
    )
    fresh = render_pcs(dgd, config=CONFIG, existing=None)
    clique = fresh.spec.template.cliques[0]
    legacy = structs.replace(clique, topology_constraint=TopologyConstraint(pack_domain="rack"))
    existing = structs.replace(
        fresh,
        spec=structs.replace(fresh.spec, template=structs.replace(fresh.spec.template, cliques=[legacy])),
    )

    # when rendered against it (the desired constraint names the topology)
    assert (clique.topology_constraint.topology_name if clique.topology_constraint else None) == "topo"
    rendered = render_pcs(dgd, config=CONFIG, existing=existing).spec.template.cliques[0]

    # then the legacy form is kept for this reconcile, so Grove can repair it in two steps
    assert rendered.topology_constraint == TopologyConstraint(pack_domain="rack")
