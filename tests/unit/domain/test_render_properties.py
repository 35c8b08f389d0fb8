"""Properties of rendering over generated valid DGDs (``tests.strategies``), on both pathways.

Rendering is deterministic to the byte; the worker hash ignores scaling edits and follows every
worker pod edit; PodCliqueSet names keep the Grove pod-name budget; and no rendered object name or
label value exceeds Kubernetes' 63 characters.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from msgspec import structs

from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER
from dgd.domain.manifests import dump_manifests
from dgd.domain.naming import GROVE_POD_NAME_BUDGET, component_budget
from dgd.domain.preflight import unsupported
from dgd.domain.render.offline import Pathway, prepare, render
from dgd.domain.roles import roles, uses_pcsg
from dgd.domain.worker_generation import CURRENT_WORKER_HASH, CURRENT_WORKER_HASH_V2
from dgd.domain.worker_hash import worker_hash
from dgd.messages.component import WORKER_TYPES, ScalingAdapter
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from tests.strategies import Document, valid_dgds

CONFIG = OperatorConfig()
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
pathways = st.sampled_from(["grove", "component"])


def _renderable(
    document: Document, pathway: Pathway, *, global_namespace: bool = False
) -> DynamoGraphDeployment:
    """The prepared DGD of a generated document, skipping what this operator refuses by design.

    ``global_namespace`` puts every component in Dynamo namespace ``dynamo``, so that long DGD names
    (whose ``<namespace>-<dgd>`` runtime namespace would be refused) render too.
    """
    document = copy.deepcopy(document)
    components = document["spec"]["components"]
    assume(all(c["type"] != "epp" for c in components))
    for component in components:
        if global_namespace:
            component["globalDynamoNamespace"] = True
    if pathway == "component":
        for component in components:
            component.pop("minAvailable", None)
    dgd = prepare(document, namespace=None, config=CONFIG, pathway=pathway)
    assume(not unsupported(dgd, CONFIG))
    return dgd


def _workers(dgd: DynamoGraphDeployment) -> list[int]:
    return [i for i, c in enumerate(dgd.spec.components or []) if c.type in WORKER_TYPES]


def _with_component(dgd: DynamoGraphDeployment, index: int, **changes: Any) -> DynamoGraphDeployment:
    components = list(dgd.spec.components or [])
    components[index] = structs.replace(components[index], **changes)
    return structs.replace(dgd, spec=structs.replace(dgd.spec, components=components))


@PROPERTY
@given(valid_dgds(), pathways)
def test_rendering_the_same_dgd_twice_gives_the_same_bytes(document: Document, pathway: Pathway) -> None:
    # given a renderable DGD, prepared twice from the same manifest
    first, second = _renderable(document, pathway), _renderable(document, pathway)

    # when both are rendered and printed
    printed = [dump_manifests(render(dgd, config=CONFIG)) for dgd in (first, second)]

    # then the output is byte-identical
    assert printed[0] == printed[1]


@PROPERTY
@given(valid_dgds(), st.integers(0, 9), st.integers(1, 9), st.booleans())
def test_worker_hash_ignores_scaling_edits(
    document: Document, replicas: int, floor: int, adapter: bool
) -> None:
    # given a DGD with workers
    dgd = _renderable(document, "grove")
    assume(_workers(dgd))
    before = worker_hash(dgd)

    # when every worker's replicas, minAvailable and scaling adapter change, and every other
    # component's replicas too
    edited = dgd
    for index in _workers(dgd):
        edited = _with_component(
            edited,
            index,
            replicas=replicas,
            min_available=min(floor, replicas) or 1,
            scaling_adapter=ScalingAdapter() if adapter else None,
        )
    for index, _ in enumerate(dgd.spec.components or []):
        if index not in _workers(dgd):
            edited = _with_component(edited, index, replicas=replicas)

    # then the worker hash is the same (``desired_worker_hash`` does not compute it again for a scale)
    assert worker_hash(edited) == before


@PROPERTY
@given(valid_dgds(), pathways, st.text("0123456789abcdef", min_size=8, max_size=8))
def test_worker_hash_reads_none_of_the_annotations_the_operator_writes(
    document: Document, pathway: Pathway, recorded: str
) -> None:
    # given a DGD, and the same DGD once the operator recorded its worker hashes and provider
    dgd = _renderable(document, pathway)
    own = {CURRENT_WORKER_HASH_V2: recorded, CURRENT_WORKER_HASH: recorded, WORKLOAD_PROVIDER: pathway}
    annotated = structs.replace(
        dgd, metadata=structs.replace(dgd.metadata, annotations={**(dgd.metadata.annotations or {}), **own})
    )
    # then both have the same worker hash (``desired_worker_hash`` does not compute it again for them)
    assert worker_hash(annotated) == worker_hash(dgd)


@PROPERTY
@given(valid_dgds(), st.sampled_from(["image", "env", "args", "shm"]), st.data())
def test_worker_hash_changes_on_any_worker_pod_edit(
    document: Document, edit: str, data: st.DataObject
) -> None:
    # given a DGD with workers, and one of them
    dgd = _renderable(document, "grove")
    assume(_workers(dgd))
    index = data.draw(st.sampled_from(_workers(dgd)))
    component = (dgd.spec.components or [])[index]
    template = copy.deepcopy(component.pod_template or {})
    main = next(c for c in template["spec"]["containers"] if c.get("name") == "main")

    # when its pod changes: image, env, args or shared memory
    changes: dict[str, Any] = {"pod_template": template}
    if edit == "image":
        main["image"] = main.get("image", "") + "-edited"
    elif edit == "env":
        main["env"] = [*main.get("env", []), {"name": "EDITED_BY_TEST", "value": "1"}]
    elif edit == "args":
        main["args"] = [*main.get("args", []), "--edited"]
    else:
        changes = {"shared_memory_size": "3Gi" if component.shared_memory_size != "3Gi" else "4Gi"}

    # then the worker hash changes
    assert worker_hash(_with_component(dgd, index, **changes)) != worker_hash(dgd)


@PROPERTY
@given(valid_dgds())
def test_pod_clique_set_names_keep_the_grove_pod_name_budget(document: Document) -> None:
    # given a renderable DGD on the Grove pathway
    dgd = _renderable(document, "grove")

    # when rendered
    pcs = render(dgd, config=CONFIG)[0]

    # then the name, plus any component's share of a pod name, fits 45 characters
    name = pcs["metadata"]["name"]
    assert len(name) <= GROVE_POD_NAME_BUDGET
    for component in dgd.spec.components or []:
        roles_in_name = [r.name for r in roles(component)] if uses_pcsg(component) else []
        assert len(name) + component_budget(component.name, roles_in_name) <= GROVE_POD_NAME_BUDGET


@PROPERTY
@given(valid_dgds(), pathways, st.booleans())
def test_no_rendered_name_or_label_value_exceeds_63_characters(
    document: Document, pathway: Pathway, global_namespace: bool
) -> None:
    # given a renderable DGD, its DGD and component names up to 62 and 16 characters long
    dgd = _renderable(document, pathway, global_namespace=global_namespace)

    # when rendered
    objects = render(dgd, config=CONFIG)

    # then every object, clique and scaling-group name and every label or selector value fits 63
    too_long = [value for obj in objects for value in _names_and_label_values(obj) if len(value) > 63]
    assert too_long == []


def _names_and_label_values(value: Any, key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        if key in ("labels", "selector", "matchLabels") and all(isinstance(v, str) for v in value.values()):
            yield from value.values()
        for child_key, child in value.items():
            if (
                child_key in ("name", "roleName")
                and isinstance(child, str)
                and key in ("metadata", "", "spec")
            ):
                yield child
            yield from _names_and_label_values(child, child_key)
    elif isinstance(value, list):
        for item in value:
            if key in ("cliques", "podCliqueScalingGroups") and isinstance(item, dict):
                yield str(item.get("name", ""))
            yield from _names_and_label_values(item, key)
