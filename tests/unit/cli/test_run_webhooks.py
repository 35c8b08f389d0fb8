"""``dgd-operator run``'s webhook flags: what the chart passes settles into the webhooks' settings, and a
bad value is a usage error naming the flag."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from dgd.cli.exits import Usage
from dgd.cli.run import Options, add_command, options
from dgd.daemon.registration import WebhookSettings, configurations


def settle(*argv: str) -> Options:
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    return options(parser.parse_args(["run", *argv]))


def test_the_charts_webhook_flags_settle_into_the_webhook_settings() -> None:
    # when run is given the webhook flags a chart release named "team-ops" in namespace ops passes
    settled = settle(
        "--webhook-addr", ":9443",
        "--webhook-register", "service",
        "--webhook-service", "ops/team-ops-webhook-service",
        "--webhook-secret", "ops/team-ops-webhook-server-cert",
        "--webhook-configuration-prefix", "team-ops",
        "--webhook-failure-policy", "Ignore",
    )  # fmt: skip

    # then the webhooks are served there, registered through that Service, certified from that Secret
    webhooks = settled.settings.webhooks
    assert webhooks is not None
    assert (webhooks.address, webhooks.register) == (":9443", "service")
    assert (webhooks.service_namespace, webhooks.service_name) == ("ops", "team-ops-webhook-service")
    assert (webhooks.secret_namespace, webhooks.secret_name) == ("ops", "team-ops-webhook-server-cert")
    # and the configurations registered are named after the release and let writes through while down
    registered = configurations(webhooks, b"", url=None, namespaces=())
    assert [c["metadata"]["name"] for _, c in registered] == ["team-ops-mutating", "team-ops-validating"]
    policies = {hook["failurePolicy"] for _, c in registered for hook in c["webhooks"]}
    assert policies == {"Ignore"}


def test_without_the_flags_the_configurations_keep_upstreams_names_and_refuse_while_down() -> None:
    # when run is given no webhook flag
    webhooks = settle("--webhook-register", "none").settings.webhooks

    # then the configurations are dynamo-operator-mutating and -validating, failing closed
    assert webhooks is not None
    assert webhooks.configuration_prefix == "dynamo-operator" == WebhookSettings().configuration_prefix
    assert webhooks.failure_policy == "Fail"


def test_a_certificate_directory_is_served_instead_of_the_operators_own(tmp_path: Path) -> None:
    # when run is given cert-manager's mounted certificate directory
    webhooks = settle("--webhook-register", "service", "--webhook-cert-dir", str(tmp_path)).settings.webhooks

    # then the webhooks read their certificates there
    assert webhooks is not None and webhooks.cert_dir == str(tmp_path)


def test_webhook_addr_zero_turns_the_webhooks_off() -> None:
    # when run is given --webhook-addr 0, then no webhook is served (nor registered)
    assert settle("--webhook-addr", "0").settings.webhooks is None


@pytest.mark.parametrize(
    "prefix",
    ["Team_Ops", "-ops", "ops-", "", "x" * 240],
    ids=["upper case and underscore", "leading dash", "trailing dash", "empty", "too long"],
)
def test_a_configuration_prefix_that_cannot_name_objects_is_a_usage_error(prefix: str) -> None:
    # when run is given a prefix the configurations cannot be named with
    with pytest.raises(Usage) as refused:
        settle("--webhook-register", "none", f"--webhook-configuration-prefix={prefix}")

    # then the error names the flag and the value, and says what a name may hold
    assert f"--webhook-configuration-prefix: {prefix!r} is not a name prefix" in str(refused.value)
    assert "lower-case letters, digits" in str(refused.value)


def test_a_failure_policy_other_than_fail_or_ignore_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # when run is given a failure policy the API server does not know
    with pytest.raises(SystemExit) as refused:
        settle("--webhook-failure-policy", "Retry")

    # then argparse refuses it (exit 2), listing the two there are
    assert refused.value.code == 2
    assert "--webhook-failure-policy: invalid choice: 'Retry' (choose from" in capsys.readouterr().err


def test_outside_a_pod_the_webhooks_listen_on_loopback_and_register_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given no service-account namespace file: not in a pod
    monkeypatch.setattr("dgd.cli.run_webhooks.POD_NAMESPACE_FILE", tmp_path / "absent")

    # when run is given no webhook flag
    webhooks = settle().settings.webhooks

    # then the webhooks listen on loopback only, where nothing registers them
    assert webhooks is not None
    assert (webhooks.address, webhooks.register) == ("127.0.0.1:9443", "none")


def test_in_a_pod_the_webhooks_listen_on_every_interface_behind_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given the service-account namespace file of a pod
    (tmp_path / "namespace").write_text("ops")
    monkeypatch.setattr("dgd.cli.run_webhooks.POD_NAMESPACE_FILE", tmp_path / "namespace")

    # when run is given no webhook flag
    webhooks = settle().settings.webhooks

    # then the Service reaches them on every interface, and the leader registers that Service
    assert webhooks is not None
    assert (webhooks.address, webhooks.register) == (":9443", "service")


def test_url_registration_outside_a_pod_needs_no_webhook_addr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given not in a pod
    monkeypatch.setattr("dgd.cli.run_webhooks.POD_NAMESPACE_FILE", tmp_path / "absent")

    # when run is told to register the webhooks by URL, with no --webhook-addr
    webhooks = settle("--webhook-register", "url").settings.webhooks

    # then they are served, and registered, at the loopback default
    assert webhooks is not None
    assert (webhooks.address, webhooks.register) == ("127.0.0.1:9443", "url")


def test_the_help_says_where_the_webhooks_listen_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    # when run's help is printed
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--help"])

    # then it names both defaults
    text = " ".join(capsys.readouterr().out.split())
    assert "127.0.0.1:9443 outside a pod" in text
    assert ":9443 in a pod" in text
