"""One predicate per rule: Grove disabled, no multinode orchestrator, the checkpoint gate, control."""

from __future__ import annotations

import msgspec

from dgd.domain.checkpoint import checkpoint_refused
from dgd.domain.orchestrators import grove_disabled, lacks_multinode_orchestrator
from dgd.domain.ownership import controlled_by
from dgd.messages.component import ComponentSpec
from dgd.messages.config import OperatorConfig
from dgd.messages.meta import ObjectMeta

MULTINODE = msgspec.convert(
    {"name": "prefill", "type": "prefill", "multinode": {"nodeCount": 2}}, ComponentSpec
)
SINGLE = msgspec.convert({"name": "decode", "type": "decode"}, ComponentSpec)
CHECKPOINTED = msgspec.convert(
    {"name": "decode", "type": "decode", "experimental": {"checkpoint": {"enabled": True}}}, ComponentSpec
)


def _config(**gates: bool | None) -> OperatorConfig:
    document = {
        "orchestrators": {"grove": {"enabled": gates.get("grove")}, "lws": {"enabled": gates.get("lws")}},
        "checkpoint": {"enabled": bool(gates.get("checkpoint"))},
    }
    return msgspec.convert(document, OperatorConfig)


def test_grove_is_disabled_only_when_the_config_says_false() -> None:
    # given the Grove gate off, on, and unset (which follows what the cluster serves): then
    assert grove_disabled(_config(grove=False))
    assert not grove_disabled(_config(grove=True))
    assert not grove_disabled(_config(grove=None))


def test_only_a_multinode_component_lacks_an_orchestrator_and_only_with_leader_worker_set_off() -> None:
    # given a multinode and a single-node component, under each LeaderWorkerSet gate: then
    assert lacks_multinode_orchestrator(MULTINODE, _config(lws=False))
    assert not lacks_multinode_orchestrator(MULTINODE, _config(lws=True))
    assert not lacks_multinode_orchestrator(MULTINODE, _config(lws=None))
    assert not lacks_multinode_orchestrator(SINGLE, _config(lws=False))


def test_a_checkpointed_component_is_refused_only_while_the_checkpoint_gate_is_off() -> None:
    # given a component with and one without checkpoints, under each checkpoint gate: then
    assert checkpoint_refused(CHECKPOINTED, _config(checkpoint=False))
    assert not checkpoint_refused(CHECKPOINTED, _config(checkpoint=True))
    assert not checkpoint_refused(SINGLE, _config(checkpoint=False))


def test_only_a_controller_reference_with_the_uid_makes_an_object_controlled() -> None:
    # given an object with a controller reference to "u-1", and one that is merely owned by it
    reference = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "name": "demo",
        "uid": "u-1",
    }
    owned = msgspec.convert({"ownerReferences": [{**reference, "controller": True}]}, ObjectMeta)
    merely_owned = msgspec.convert({"ownerReferences": [reference]}, ObjectMeta)

    # when asked whether the DGD "u-1" (or another object, or none) controls them: then
    assert controlled_by(owned, "u-1")
    assert not controlled_by(owned, "u-2")
    assert not controlled_by(merely_owned, "u-1")
    assert not controlled_by(owned, None)
