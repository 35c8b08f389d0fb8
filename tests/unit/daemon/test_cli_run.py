"""``dgd-operator run``: its flags, how they settle with the config file, and a real SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

import anyio
import pytest

from dgd.cli import main
from dgd.cli.exits import Usage
from dgd.cli.run import Options, add_command, options, serve
from dgd.cluster.memory.adapter import MemoryCluster
from tests.unit.daemon.harness import LEASE_NS, install, lease_spec

FLAGS = (
    "--kubeconfig",
    "--namespace",
    "--config",
    "--metrics-addr",
    "--metrics-secure",
    "--no-metrics-secure",
    "--metrics-cert-dir",
    "--probe-addr",
    "--webhook-addr",
    "--webhook-cert-dir",
    "--webhook-secret",
    "--webhook-cert-validity",
    "--webhook-register",
    "--webhook-service",
    "--webhook-configuration-prefix",
    "--webhook-failure-policy",
    "--operator-principal",
    "--leader-elect",
    "--no-leader-elect",
    "--lease-name",
    "--lease-namespace",
    "--lease-duration",
    "--renew-deadline",
    "--retry-period",
    "--qps",
    "--burst",
    "--log-format",
    "--log-level",
    "--shutdown-timeout",
    "--instance",
    "--webhook-pod-restore-failure-policy",
)


def settle_flags(*argv: str) -> Options:
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    return options(parser.parse_args(["run", *argv]))


def test_help_documents_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    # when run's help is asked for
    with pytest.raises(SystemExit) as exit:
        main(["run", "--help"])

    # then it lists every flag
    out = capsys.readouterr().out
    assert exit.value.code == 0
    for flag in FLAGS:
        assert flag in out, flag


def test_one_namespace_restricts_the_operator_to_it() -> None:
    # when one --namespace is given
    settled = settle_flags("--namespace", "team-a")

    # then the operator runs namespace-restricted there
    assert settled.config.namespace.restricted == "team-a"


def test_repeated_namespaces_are_all_watched_in_restricted_mode() -> None:
    # when --namespace is given three times, once twice over
    settled = settle_flags("--namespace", "team-a", "--namespace", "team-b", "--namespace", "team-a")

    # then each is watched once, in order, and the first is the restricted-mode switch of the config
    assert settled.settings.namespaces == ("team-a", "team-b")
    assert settled.config.namespace.restricted == "team-a"


def test_no_namespace_flag_leaves_the_config_in_charge() -> None:
    # when no --namespace is given, then no namespace is imposed on the configuration
    settled = settle_flags()

    assert settled.settings.namespaces == ()
    assert settled.config.namespace.restricted == ""


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "--namespace: '' is empty: a namespace name is required"),
        ("Team_A", "--namespace: 'Team_A' is not a valid namespace name: lower-case letters, digits and '-'"),
        ("a" * 64, f"--namespace: '{'a' * 64}' is 64 characters long: a namespace name has at most 63"),
    ],
)
def test_a_bad_namespace_is_a_usage_error_naming_flag_and_value(
    name: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # when a namespace name is not one, then the command refuses, naming the flag, the value and the rule
    code = main(["run", "--namespace", "team-a", "--namespace", name])

    err = capsys.readouterr().err
    assert code == 2
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lease-duration", "soon"], "--lease-duration: 'soon' is not a duration"),
        (["--lease-duration", "5s"], "the lease duration must be longer than the renew deadline"),
        (["--shutdown-timeout", "0"], "--shutdown-timeout: '0' must be positive"),
        (["--metrics-addr", "localhost"], "--metrics-addr: 'localhost' is not [HOST]:PORT"),
        (["--max-concurrent-reconciles", "0"], "--max-concurrent-reconciles: 0 must be at least 1"),
        (
            ["--record", "/no/such/dir/trace.jsonl"],
            "--record /no/such/dir/trace.jsonl: the folder /no/such/dir does not exist",
        ),
    ],
)
def test_bad_flags_are_usage_errors_naming_the_flag(argv: list[str], message: str) -> None:
    # when a flag's value is wrong, then the error names it
    with pytest.raises(Usage, match=message.replace("[", r"\[").replace("(", r"\(")):
        settle_flags(*argv)


def test_flags_default_from_the_config_file_and_override_it(tmp_path: Path) -> None:
    # given a config file that turns leader election off and names the lease and the log format
    config = tmp_path / "config.yaml"
    config.write_text(
        "leaderElection: {enabled: false, id: dynamo-lock, namespace: ops}\n"
        "logging: {format: text, level: debug}\n"
        "server: {metrics: {port: 9090}}\n"
    )

    # when only the config is given, it decides; when flags are given too, they do
    from_file = settle_flags("--config", str(config))
    from_flags = settle_flags(
        "--config", str(config), "--leader-elect", "--lease-name", "mine", "--log-format", "json"
    )

    # then
    assert from_file.settings.leader_elect is False
    assert (from_file.settings.lease_name, from_file.settings.lease_namespace) == ("dynamo-lock", "ops")
    assert (from_file.log_format, from_file.log_level) == ("text", "debug")
    assert from_file.settings.metrics_address == "0.0.0.0:9090"
    assert from_flags.settings.leader_elect is True
    assert (from_flags.settings.lease_name, from_flags.log_format) == ("mine", "json")


def test_metrics_are_secure_unless_the_flag_or_the_config_file_says_otherwise(tmp_path: Path) -> None:
    # given a config file that turns secure metrics off
    config = tmp_path / "config.yaml"
    config.write_text("server: {metrics: {secure: false}}\n")
    # when run settles with no flag, with the config file, with the flag over it, and with the flag alone
    default = settle_flags()
    from_file = settle_flags("--config", str(config))
    from_flag = settle_flags("--config", str(config), "--metrics-secure", "--metrics-cert-dir", str(tmp_path))
    plain = settle_flags("--no-metrics-secure")
    # then metrics are secure by default, with a certificate of the replica's own
    assert (default.settings.metrics_secure, default.settings.metrics_cert_dir) == (True, None)
    # and the config file turns them off, the flag on again, with the mounted certificate it names
    assert from_file.settings.metrics_secure is False
    assert (from_flag.settings.metrics_secure, from_flag.settings.metrics_cert_dir) == (True, str(tmp_path))
    assert plain.settings.metrics_secure is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--metrics-cert-dir", "/no/such/dir"], "--metrics-cert-dir: '/no/such/dir' is not a directory"),
        (
            ["--no-metrics-secure", "--metrics-cert-dir", "/tmp"],
            "--metrics-cert-dir: '/tmp' is for HTTPS metrics, but they are served over plain HTTP",
        ),
    ],
)
def test_a_metrics_certificate_folder_that_cannot_be_served_is_a_usage_error(
    argv: list[str], message: str
) -> None:
    with pytest.raises(Usage, match=message):
        settle_flags(*argv)


def test_without_flags_leader_election_is_on_with_the_documented_durations() -> None:
    settled = settle_flags()
    assert settled.settings.leader_elect is True
    assert settled.settings.timing.duration == 15.0
    assert settled.settings.timing.renew_deadline == 10.0
    assert settled.settings.timing.retry_period == 2.0
    assert settled.settings.shutdown_timeout == 30.0
    assert (settled.log_format, settled.log_level) == ("json", "info")


def test_the_pod_restore_failure_policy_is_ignore_unless_the_flag_says_fail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # when the flag is left out, or says Fail
    default = settle_flags().settings.webhooks
    failing = settle_flags("--webhook-pod-restore-failure-policy", "Fail").settings.webhooks

    # then the pod mutator is registered Ignore, or Fail; the other webhooks keep theirs
    assert default is not None and failing is not None
    assert (default.pod_restore_failure_policy, failing.pod_restore_failure_policy) == ("Ignore", "Fail")
    assert failing.failure_policy == "Fail"
    # and anything else is refused, naming the choices
    with pytest.raises(SystemExit) as exit:
        settle_flags("--webhook-pod-restore-failure-policy", "ignore")
    assert exit.value.code == 2
    assert "invalid choice: 'ignore' (choose from" in capsys.readouterr().err


@pytest.mark.anyio
async def test_sigterm_stops_the_daemon_gracefully_and_releases_the_lease() -> None:
    # given the daemon running against a memory cluster, holding the lease
    server = MemoryCluster(namespaces=(LEASE_NS,))
    await install(server)
    settled = settle_flags(
        "--metrics-addr", "127.0.0.1:0", "--probe-addr", "127.0.0.1:0", "--lease-namespace", LEASE_NS,
        "--instance", "me",
    )  # fmt: skip
    code: list[int] = []

    async def run() -> None:
        code.append(await serve(server.client(), ["v1", "grove.io/v1alpha1"], settled))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(10):
            while (spec := await lease_spec(server)) is None or spec.get("holderIdentity") != "me":
                await anyio.sleep(0.01)
            while signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                await anyio.sleep(0.01)

        # when the process gets SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)

    # then it exited 0 and released the lease
    assert code == [0]
    spec = await lease_spec(server)
    assert spec is not None and "holderIdentity" not in spec
