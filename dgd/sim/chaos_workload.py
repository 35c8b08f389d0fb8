"""The user's side of a chaos schedule: which example DGDs are applied, and how they are edited.

A seed picks ``dgds`` graphs from the example manifests, each on the Grove or the Component pathway
(the latter through the ``nvidia.com/enable-grove: "false"`` annotation), names them apart, applies
them in the first seconds, and then edits some of them while the faults run:

* a **rollout**: a new value of a graph-wide environment variable, so every component's pod template
  changes (a rolling update on either pathway); half of them are a **replace**, as ``kubectl replace
  -f`` of the user's manifest leaves the DGD: the operator's worker-hash annotations and its finalizer
  are dropped in the same write (issue 32, #13495: the worker DCDs still say what serves);
* a **scale**: one component to 1..3 replicas, through its scaling adapter's ``scale`` subresource when
  it has one (as a planner would), else by a merge patch of the DGD's component list.

Everything is a trace record (``Apply``, ``Patch``), drawn from the seed alone: the same examples and
seed give the same records.
"""

from __future__ import annotations

import copy
import random
from typing import Any, Literal

import msgspec

from dgd.domain.adapters import adapter_name
from dgd.domain.conversion.dgd import ConversionError, dgd_to_v1beta1
from dgd.domain.manifests import ManifestError, load_manifests
from dgd.messages import dgd as dgd_kind
from dgd.messages import dgdsa
from dgd.messages.trace import Apply, ObjectRef, Patch

Pathway = Literal["grove", "component"]
PATHWAYS: tuple[Pathway, ...] = ("grove", "component")
#: The annotation that sends a DGD down the Component pathway.
ENABLE_GROVE = "nvidia.com/enable-grove"
#: The graph-wide environment variable a rollout edit changes.
ROLLOUT_ENV = "CHAOS_ROLLOUT"
#: The operator's bookkeeping annotations a replace drops (the workload provider, immutable, stays).
OPERATOR_ANNOTATIONS = ("nvidia.com/current-worker-hash-v2", "nvidia.com/current-worker-hash")

#: Cluster seconds within which the graphs are applied.
APPLY_WITHIN = 10.0
#: Cluster seconds between which edits happen (after the graphs had time to come up).
EDITS_FROM, EDITS_TO = 40.0, 160.0
#: At most this many edits per graph.
MAX_EDITS = 2


class Example(msgspec.Struct, frozen=True):
    """An example DGD: a v1beta1 manifest and the file it came from."""

    source: str
    document: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.document["metadata"]["name"])


class Graph(msgspec.Struct, frozen=True):
    """One DGD of a workload: its reference, the example it came from and its pathway."""

    ref: ObjectRef
    source: str
    pathway: Pathway


class Workload(msgspec.Struct, frozen=True):
    """The graphs of one schedule and the user's actions on them, in time order."""

    graphs: tuple[Graph, ...]
    actions: tuple[Apply | Patch, ...]


def examples_in(text: str, source: str) -> list[Example]:
    """Every DGD of a manifest file's ``text`` as an example (v1alpha1 ones converted); ``ValueError``
    naming ``source`` and the document if the text is not manifests or a DGD cannot be converted."""
    try:
        documents = load_manifests(text)
    except ManifestError as exc:
        raise ValueError(f"{source}: {exc}") from exc
    examples = []
    for index, document in enumerate(documents):
        if not isinstance(document, dict) or document.get("kind") != dgd_kind.KIND:
            continue
        if document.get("apiVersion") == dgd_kind.API_VERSION_V1ALPHA1:
            try:
                document = dgd_to_v1beta1(document)
            except ConversionError as exc:
                raise ValueError(f"{source}#{index}: {exc}") from exc
        examples.append(Example(source, document))
    return examples


def dgd_ref(name: str, namespace: str = "default") -> ObjectRef:
    return ObjectRef(dgd_kind.API_VERSION, dgd_kind.KIND, name, namespace)


def workload(examples: tuple[Example, ...], *, seed: int, dgds: int) -> Workload:
    """``dgds`` graphs drawn from ``examples`` by ``seed``, their applies and edits (see the module)."""
    if not examples:
        raise ValueError("a workload needs at least one example DGD")
    rng = random.Random(f"workload:{seed}")
    graphs: list[Graph] = []
    actions: list[Apply | Patch] = []
    for index in range(dgds):
        example = examples[rng.randrange(len(examples))]
        pathway = PATHWAYS[rng.randrange(len(PATHWAYS))]
        document = _placed(example.document, f"{example.name}-{pathway[0]}{index}", pathway)
        graph = Graph(dgd_ref(document["metadata"]["name"]), example.source, pathway)
        graphs.append(graph)
        actions.append(Apply(at=_time(rng.uniform(0.0, APPLY_WITHIN)), object=document))
        actions += _edits(rng, graph, document)
    actions.sort(key=lambda action: action.at)
    return Workload(tuple(graphs), tuple(actions))


def _placed(document: dict[str, Any], name: str, pathway: Pathway) -> dict[str, Any]:
    """A copy of ``document`` named ``name`` in namespace ``default``, on ``pathway``."""
    placed = copy.deepcopy(document)
    metadata = placed.setdefault("metadata", {})
    metadata["name"] = name
    metadata["namespace"] = "default"
    annotations = metadata.setdefault("annotations", {})
    annotations.pop(ENABLE_GROVE, None)
    if pathway == "component":
        annotations[ENABLE_GROVE] = "false"
    if not annotations:
        del metadata["annotations"]
    return placed


def _edits(rng: random.Random, graph: Graph, document: dict[str, Any]) -> list[Patch]:
    """Up to ``MAX_EDITS`` rollouts and scales of one graph, at random times in the edit window."""
    components: list[dict[str, Any]] = copy.deepcopy(document["spec"].get("components") or [])
    times = sorted(_time(rng.uniform(EDITS_FROM, EDITS_TO)) for _ in range(rng.randint(0, MAX_EDITS)))
    edits: list[Patch] = []
    for number, at in enumerate(times, start=1):
        draw = rng.random()
        if draw < 0.5 or not components:
            env = [{"name": ROLLOUT_ENV, "value": f"{graph.ref.name}-{number}"}]
            patch: dict[str, Any] = {"spec": {"env": env}}
            if draw < 0.25:
                patch["metadata"] = {"annotations": dict.fromkeys(OPERATOR_ANNOTATIONS), "finalizers": None}
            edits.append(Patch(at=at, target=graph.ref, patch=patch))
            continue
        component = components[rng.randrange(len(components))]
        current = component.get("replicas", 1)
        replicas = rng.choice([n for n in (1, 2, 3) if n != current])
        component["replicas"] = replicas
        if "scalingAdapter" in component:
            # The adapter owns the replicas: a planner scales it, never the DGD.
            adapter = ObjectRef(
                dgdsa.API_VERSION, dgdsa.KIND, adapter_name(graph.ref.name, component["name"]), "default"
            )
            edits.append(
                Patch(at=at, target=adapter, patch={"spec": {"replicas": replicas}}, subresource="scale")
            )
        elif not any("scalingAdapter" in c for c in components):
            edits.append(
                Patch(at=at, target=graph.ref, patch={"spec": {"components": copy.deepcopy(components)}})
            )
        else:
            # A list patch would also set the adapter-owned replicas: leave this graph's size alone.
            component["replicas"] = current
    return edits


def _time(seconds: float) -> float:
    """Times in traces are kept to tenths of a second, so they read well."""
    return round(seconds, 1)
