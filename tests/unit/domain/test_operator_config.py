"""The operator configuration: upstream defaults, ours where upstream needs Helm, YAML loading."""

from __future__ import annotations

import pytest

from dgd.domain.admission.config import load_config
from dgd.messages.config import ConfigError, OperatorConfig, format_duration, termination_delay


def test_empty_file_gives_defaults_that_need_no_helm_chart() -> None:
    # given no configuration at all
    config = load_config("")

    # then upstream defaults hold, Grove is auto-detected, and required names name our own objects
    assert config == OperatorConfig()
    assert config.orchestrators.grove.enabled is None
    assert config.discovery.backend == "kubernetes"
    assert termination_delay(config) == "15m0s"
    assert config.rbac.planner_cluster_role_name == "dynamo-operator-planner"
    assert config.mpi.ssh_secret_name == "mpi-run-ssh-secret"


def test_upstream_style_file_is_read_with_camel_case_keys() -> None:
    # given a file as upstream's Helm chart renders it
    text = """
apiVersion: operator.config.dynamo.nvidia.com/v1alpha1
kind: OperatorConfiguration
orchestrators:
  grove: {enabled: false, terminationDelay: "4h"}
infrastructure: {natsAddress: "nats://n:4222", modelExpressURL: "http://mx"}
ingress: {controllerTLSSecretName: tls}
"""
    # when it is loaded
    config = load_config(text)

    # then known values are taken as written
    assert config.orchestrators.grove.enabled is False
    assert termination_delay(config) == "4h0m0s"
    assert config.infrastructure.model_express_url == "http://mx"
    assert config.ingress.controller_tls_secret_name == "tls"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "rollout: {progresDeadline: 5m}",
            'rollout.progresDeadline: unknown field "progresDeadline" (did you mean "progressDeadline"?)',
        ),
        (
            "orchestrators: {grov: {enabled: false}}",
            'orchestrators.grov: unknown field "grov" (did you mean "grove"?)',
        ),
        ("checkpont: {enabled: true}", 'checkpont: unknown field "checkpont" (did you mean "checkpoint"?)'),
    ],
)
def test_misspelt_key_is_refused_naming_it_and_the_nearest_known_key(text: str, message: str) -> None:
    # given a configuration with a misspelt key, when it is loaded, then it is refused naming both
    with pytest.raises(ConfigError) as refused:
        load_config(text)
    assert str(refused.value) == message


def test_every_misspelt_key_is_reported_at_once() -> None:
    # given two misspelt keys in different sections
    text = "rollout: {progresDeadline: 5m}\ncheckpont: {enabled: true}"

    # when it is loaded, then both are named in the one error
    with pytest.raises(ConfigError) as refused:
        load_config(text)
    assert "rollout.progresDeadline" in str(refused.value)
    assert "checkpont" in str(refused.value)


@pytest.mark.parametrize("delay", ["0", "0s"])
def test_zero_termination_delay_means_the_default(delay: str) -> None:
    config = load_config(f"orchestrators: {{grove: {{terminationDelay: '{delay}'}}}}")
    assert termination_delay(config) == "15m0s"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("orchestrators: {grove: {terminationDelay: '-5m'}}", "must not be negative"),
        ("orchestrators: {grove: {terminationDelay: 'soon'}}", "is not a duration"),
        ("discovery: {backend: consul}", "discovery.backend"),
        ("rbac: {plannerClusterRoleName: ''}", "planner ClusterRole name is required"),
        ("leaderElection: {enabled: true}", "leader election ID is required"),
        ("- a list", "must be a mapping"),
        ("a: [", "not valid YAML"),
    ],
)
def test_bad_configuration_is_refused_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(text)


def test_restricted_mode_needs_no_cluster_role_names() -> None:
    config = load_config("namespace: {restricted: team}\nrbac: {plannerClusterRoleName: ''}")
    assert config.namespace.restricted == "team"


@pytest.mark.parametrize(
    ("seconds", "text"), [(900, "15m0s"), (14400, "4h0m0s"), (30, "30s"), (5430, "1h30m30s")]
)
def test_durations_print_as_go_does(seconds: int, text: str) -> None:
    assert format_duration(seconds) == text
