"""Feature gates: resolved once from the config and the APIs the cluster serves (dgd-domain §17)."""

from __future__ import annotations

import pytest

from dgd.domain.gates import GROVE_API, GateError, Gates, effective_config, resolve_gates, served_apis
from dgd.messages.config import GateConfig, GroveConfig, OperatorConfig, OrchestratorsConfig


def test_an_unset_gate_follows_what_the_cluster_serves() -> None:
    served = served_apis(["grove.io/v1alpha1", "v1"])
    assert resolve_gates(OperatorConfig(), served) == Gates(grove=True)
    assert resolve_gates(OperatorConfig(), frozenset()) == Gates()


def test_a_gate_turned_on_without_its_api_refuses_to_start_naming_the_key() -> None:
    config = OperatorConfig(orchestrators=OrchestratorsConfig(grove=GroveConfig(enabled=True)))
    with pytest.raises(
        GateError, match=r"orchestrators\.grove\.enabled is true, but the cluster does not serve"
    ):
        resolve_gates(config, frozenset())


def test_a_gate_turned_off_stays_off_when_its_api_is_served() -> None:
    config = OperatorConfig(orchestrators=OrchestratorsConfig(grove=GroveConfig(enabled=False)))
    assert not resolve_gates(config, {GROVE_API}).grove


def test_lws_needs_volcano_too() -> None:
    assert not resolve_gates(OperatorConfig(), served_apis(["leaderworkerset.x-k8s.io/v1"])).lws
    both = served_apis(["leaderworkerset.x-k8s.io/v1", "scheduling.volcano.sh/v1beta1"])
    assert resolve_gates(OperatorConfig(), both).lws


def test_the_effective_config_carries_every_resolved_gate_as_an_explicit_boolean() -> None:
    effective = effective_config(OperatorConfig(), Gates(grove=True, kai_scheduler=True))
    assert effective.orchestrators.grove.enabled is True
    assert effective.orchestrators.kai_scheduler == GateConfig(enabled=True)
    assert effective.orchestrators.lws == GateConfig(enabled=False)
    assert effective.orchestrators.grove.termination_delay == "15m"
