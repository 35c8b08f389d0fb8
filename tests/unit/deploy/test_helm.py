"""The Helm chart, rendered by Helm itself, makes the same objects as the plain manifests.

``helm-python-sdk`` (a development dependency) bundles Helm's Go SDK as a shared library, so the
chart is rendered here by the real template engine (Go templates, Sprig, ``include``, ``fail``),
with no ``helm`` binary and no network. Each case renders the chart with some values and compares
every object with the generator's installation for the same choices (``deploy/generate.py``):
exactly, except that rules are compared as the permissions they grant (their order is free), the
operator configuration as the YAML it parses to, and the Deployment's ``checksum/config`` annotation
(Helm's way to roll the pods when the config changes) is Helm's own.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from dgd.cli.run import Options, add_command, options
from dgd.cli.run_webhooks import webhook_settings
from dgd.daemon.registration import configurations
from dgd.domain.admission.config import load_config
from tests.unit.deploy.generator import DEPLOY, find, generate
from tests.unit.deploy.recording import Permission, permissions

CHART = DEPLOY / "helm" / "dgd-operator"
RELEASE, NAMESPACE = generate.RELEASE, generate.NAMESPACE


def render(
    values: dict[str, Any], *, name: str = RELEASE, namespace: str = NAMESPACE
) -> list[dict[str, Any]]:
    """Every object the chart renders for ``values`` (as ``helm template``)."""
    with helm.Chart.load(str(CHART)) as chart:
        rendered = chart.render(values, name=name, namespace=namespace)
    return [d for text in rendered.values() for d in yaml.safe_load_all(text) if d]


def run_options(documents: list[dict[str, Any]], tmp_path: Path) -> Options:
    """What `dgd-operator run` settles from the rendered Deployment's arguments and ConfigMap."""
    (container,) = find(documents, "Deployment", RELEASE)["spec"]["template"]["spec"]["containers"]
    config = tmp_path / "config.yaml"
    config.write_text(
        find(documents, "ConfigMap", f"{RELEASE}-config")["data"]["config.yaml"], encoding="utf-8"
    )
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args([str(config) if a == generate.CONFIG_PATH else a for a in container["args"]])
    return options(args)


def normalized(document: dict[str, Any]) -> tuple[tuple[str, str | None, str], Any]:
    """An object keyed by kind, namespace and name, in the form the comparison uses (see the module)."""
    document = copy.deepcopy(document)
    metadata = document["metadata"]
    if "rules" in document:
        document["rules"] = permissions(document["rules"])
    if document["kind"] == "ConfigMap":
        document["data"]["config.yaml"] = yaml.safe_load(document["data"]["config.yaml"])
    if document["kind"] == "Deployment":
        template = document["spec"]["template"]["metadata"]
        template.get("annotations", {}).pop("checksum/config", None)
        if not template.get("annotations"):
            template.pop("annotations", None)
    return (document["kind"], metadata.get("namespace"), metadata["name"]), document


def objects(documents: list[dict[str, Any]]) -> dict[tuple[str, str | None, str], Any]:
    pairs = [normalized(d) for d in documents if d["kind"] != "Namespace"]
    keyed = dict(pairs)
    assert len(keyed) == len(pairs), "an object is rendered twice"
    return keyed


CASES: dict[str, tuple[dict[str, Any], Any]] = {
    "defaults": ({}, generate.CLUSTER_WIDE),
    "restricted to its own namespace": ({"namespaces": [NAMESPACE]}, generate.RESTRICTED),
    "restricted to another namespace": ({"namespaces": ["team-a"]}, generate.Install(watch=("team-a",))),
    "restricted to two namespaces": (
        {"namespaces": ["team-a", "team-b"]},
        generate.Install(watch=("team-a", "team-b")),
    ),
    "checkpoints on": ({"featureGates": {"checkpoint": True}}, generate.Install(checkpoint=True)),
    "grove off": ({"featureGates": {"grove": False}}, generate.Install(grove=False)),
    "one replica": ({"replicas": 1}, generate.Install(replicas=1)),
    "webhooks off": ({"webhook": {"enabled": False}}, generate.Install(webhook=False)),
    "webhooks off, restricted": (
        {"webhook": {"enabled": False}, "namespaces": ["team-a"]},
        generate.Install(webhook=False, watch=("team-a",)),
    ),
    "cert-manager's certificates": (
        {"webhook": {"certManager": {"enabled": True}}},
        generate.Install(cert_manager=True),
    ),
    "cert-manager's certificates, restricted": (
        {"webhook": {"certManager": {"enabled": True}}, "namespaces": ["team-a", "team-b"]},
        generate.Install(cert_manager=True, watch=("team-a", "team-b")),
    ),
    "webhooks off with cert-manager on": (
        {"webhook": {"enabled": False, "certManager": {"enabled": True}}},
        generate.Install(webhook=False, cert_manager=True),
    ),
    "writes admitted while the webhooks are down": (
        {"webhook": {"failurePolicy": "Ignore"}},
        generate.Install(failure_policy="Ignore"),
    ),
    "metrics over plain HTTP": ({"metrics": {"secure": False}}, generate.Install(metrics_secure=False)),
    "metrics over plain HTTP, restricted": (
        {"metrics": {"secure": False}, "namespaces": ["team-a"]},
        generate.Install(metrics_secure=False, watch=("team-a",)),
    ),
    "a mounted metrics certificate": (
        {"metrics": {"certSecret": "metrics-tls"}},
        generate.Install(metrics_cert_secret="metrics-tls"),
    ),
    "a metrics certificate named but metrics over plain HTTP": (
        {"metrics": {"secure": False, "certSecret": "metrics-tls"}},
        generate.Install(metrics_secure=False, metrics_cert_secret="metrics-tls"),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_chart_renders_the_objects_of_the_plain_installation(case: str) -> None:
    # given the chart's values for a choice, and the generator's installation for the same choice
    values, install = CASES[case]
    # when Helm renders the chart
    rendered = objects(render(values))
    expected = objects(install.manifests())
    # then it makes the same objects
    assert sorted(rendered) == sorted(expected)
    for key, document in expected.items():
        assert rendered[key] == document, key


def test_the_default_rendering_is_the_committed_cluster_wide_bundle() -> None:
    # given the committed plain manifests
    committed = [d for d in yaml.safe_load_all((DEPLOY / "manifests/cluster-wide.yaml").read_text()) if d]
    # then the chart with its defaults renders the same objects (but the Namespace: --create-namespace)
    assert objects(render({})) == objects(committed)


#: Helm's lint severities: 1 is INFO (e.g. "icon is recommended"), 2 WARNING, 3 ERROR.
WARNING = 2


def test_the_chart_lints_without_warnings_or_errors() -> None:
    # when Helm lints the chart
    findings = helm.lint(str(CHART))
    # then it finds no error and nothing worse than a recommendation
    assert findings["total_charts_linted"] == 1
    assert findings["errors"] == []
    assert not [m for m in findings["messages"] if m["severity"] >= WARNING], findings


def test_two_watched_namespaces_become_two_namespace_flags_in_order(tmp_path: Path) -> None:
    # given the chart restricted to two namespaces
    documents = render({"namespaces": ["team-b", "team-a"]})
    # when `dgd-operator run` settles the rendered arguments and configuration file
    settled = run_options(documents, tmp_path)
    # then the daemon watches both, in the order of the values, and the first is the config's switch
    assert settled.settings.namespaces == ("team-b", "team-a")
    assert settled.config.namespace.restricted == settled.config.mpi.ssh_secret_namespace == "team-b"


NAME = "1 to 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
REFUSED = {
    "an empty name": (["team-a", ""], f'namespaces[1]: "" is not a namespace name: {NAME}'),
    "a name listed twice": (
        ["team-a", "team-b", "team-a"],
        'namespaces[2]: "team-a" is listed twice: list each watched namespace once',
    ),
    "a name that is not a DNS label": (
        ["Team_A"],
        f'namespaces[0]: "Team_A" is not a namespace name: {NAME}',
    ),
    "a string instead of a list": (
        "team-a",
        'namespaces: "team-a" is not a list: give a list of namespace names, or [] to watch every namespace',
    ),
}


@pytest.mark.parametrize("policy", ["Retry", "fail", None])
def test_the_chart_refuses_a_failure_policy_other_than_fail_or_ignore(policy: str | None) -> None:
    # when rendered with a failure policy the API server does not know, then rendering fails, naming it
    with pytest.raises(helm.HelmError) as refused:
        render({"webhook": {"failurePolicy": policy}})
    assert f"webhook.failurePolicy: {json.dumps(policy)} is not Fail or Ignore" in str(refused.value)


@pytest.mark.parametrize("case", REFUSED)
def test_the_chart_refuses_namespaces_that_are_not_distinct_names(case: str) -> None:
    # given a namespaces value the operator cannot watch
    namespaces, message = REFUSED[case]
    # when rendered, then rendering fails, naming the value and saying what is allowed
    with pytest.raises(helm.HelmError) as refused:
        render({"namespaces": namespaces})
    assert message in str(refused.value)


def test_extra_configuration_is_merged_into_the_operators_config_file() -> None:
    # given values with an ingress class and a rollout deadline
    values = {"config": {"ingress": {"controllerClassName": "nginx"}, "rollout": {"progressDeadline": "1h"}}}
    # when rendered
    config_map = find(render(values), "ConfigMap", f"{RELEASE}-config")
    config = load_config(config_map["data"]["config.yaml"])
    # then the operator reads them beside what the chart set
    assert config.ingress.controller_class_name == "nginx"
    assert config.rollout.progress_deadline == "1h"
    assert (
        config.leader_election.enabled is True
        and config.rbac.planner_cluster_role_name == f"{RELEASE}-planner"
    )


def test_timing_and_throughput_values_become_flags_the_daemon_accepts(tmp_path: Path) -> None:
    # given faster leader election, a longer drain, a higher rate limit and more reconcile workers
    values = {
        "leaderElection": {"leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "4s"},
        "shutdownTimeout": "60s",
        "terminationGracePeriodSeconds": 90,
        "logFormat": "text",
        "client": {"qps": 100, "burst": "150"},
        "maxConcurrentReconciles": 32,
    }
    documents = render(values)
    deployment = find(documents, "Deployment", RELEASE)
    # when `dgd-operator run` parses the rendered arguments
    settled = run_options(documents, tmp_path)
    # then it runs with them, and the pod's grace period still covers the drain and the renew deadline
    timing = settled.settings.timing
    assert (timing.duration, timing.renew_deadline, timing.retry_period) == (30.0, 20.0, 4.0)
    assert settled.settings.shutdown_timeout == 60.0 and settled.log_format == "text"
    assert (settled.qps, settled.burst, settled.settings.max_concurrent_reconciles) == (100.0, 150, 32)
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= settled.settings.shutdown_timeout + timing.renew_deadline


def test_a_release_names_its_webhook_service_configurations_and_secret_after_itself(tmp_path: Path) -> None:
    # given the chart installed as release "team-ops" in namespace "ops", its webhooks on
    documents = render({}, name="team-ops", namespace="ops")
    (container,) = find(documents, "Deployment", "team-ops")["spec"]["template"]["spec"]["containers"]
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(container["args"])
    # when `dgd-operator run` settles the rendered arguments
    webhooks = webhook_settings(args, "ops")
    # then the leader registers the release's Service, in configurations named after the release
    assert webhooks is not None and webhooks.register == "service"
    assert (webhooks.service_namespace, webhooks.service_name) == ("ops", "team-ops-webhook-service")
    assert find(documents, "Service", "team-ops-webhook-service")["metadata"]["namespace"] == "ops"
    registered = configurations(webhooks, b"", url=None, namespaces=())
    assert [c["metadata"]["name"] for _, c in registered] == ["team-ops-mutating", "team-ops-validating"]
    # and keeps its certificates in the Secret the release's Role grants by name
    assert (webhooks.secret_namespace, webhooks.secret_name) == ("ops", "team-ops-webhook-server-cert")
    role = find(documents, "Role", "team-ops-webhook")
    assert ["team-ops-webhook-server-cert"] in [r.get("resourceNames") for r in role["rules"]]
    # and the webhook ClusterRole grants exactly those configurations by name
    cluster_role = find(documents, "ClusterRole", "team-ops-webhook")
    names = {n for r in cluster_role["rules"] if "resourceNames" in r for n in r["resourceNames"]}
    assert {"team-ops-mutating", "team-ops-validating"} <= names


def test_the_default_rendering_holds_the_disruption_budget_secure_metrics_and_the_webhook_port(
    tmp_path: Path,
) -> None:
    # given the chart rendered with its defaults, as CI renders it, and what `dgd-operator run` settles
    documents = render({})
    settled = run_options(documents, tmp_path)
    deployment = find(documents, "Deployment", RELEASE)
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}

    # then a PodDisruptionBudget keeps one of the two replicas through a drain
    budget = find(documents, "PodDisruptionBudget", RELEASE)
    assert deployment["spec"]["replicas"] == 2
    assert budget["spec"] == {"minAvailable": 1, "selector": {"matchLabels": pod["metadata"]["labels"]}}

    # and the daemon serves its metrics securely, on the port the metrics Service reaches over HTTPS
    assert settled.settings.metrics_secure is True and settled.settings.metrics_cert_dir is None
    assert settled.settings.metrics_address == f"0.0.0.0:{ports['metrics']}"
    (service_port,) = find(documents, "Service", f"{RELEASE}-metrics")["spec"]["ports"]
    assert (service_port["targetPort"], service_port["appProtocol"]) == ("metrics", "https")
    # and the operator's ServiceAccount may create exactly the two reviews that check a scraper
    account = pod["spec"]["serviceAccountName"]
    binding = find(documents, "ClusterRoleBinding", f"{RELEASE}-metrics-auth")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
    assert permissions(find(documents, "ClusterRole", binding["roleRef"]["name"])["rules"]) == {
        Permission("authentication.k8s.io", "tokenreviews", "create"),
        Permission("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
    # and scrapers are offered a role that grants only the get of /metrics
    reader = find(documents, "ClusterRole", f"{RELEASE}-metrics-reader")
    assert permissions(reader["rules"]) == {Permission("", "/metrics", "get")}

    # and the webhooks are served on the values' port, the container port their Service targets
    assert ports["webhook-server"] == 9443
    assert settled.settings.webhooks is not None and settled.settings.webhooks.address == ":9443"
    (webhook_port,) = find(documents, "Service", f"{RELEASE}-webhook-service")["spec"]["ports"]
    assert (webhook_port["port"], webhook_port["targetPort"]) == (443, "webhook-server")

    # and the resources are the values' (sized from the benchmark, values.yaml says how)
    assert container["resources"] == yaml.safe_load((CHART / "values.yaml").read_text())["resources"]


def test_a_mounted_metrics_certificate_is_what_the_daemon_serves(tmp_path: Path) -> None:
    # given the chart with the metrics certificate in a Secret
    documents = render({"metrics": {"certSecret": "metrics-tls"}})
    pod = find(documents, "Deployment", RELEASE)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    # when `dgd-operator run` settles the rendered arguments, the mounted folder being there
    mount = next(m for m in container["volumeMounts"] if m["name"] == "metrics-certs")
    container["args"] = [str(tmp_path) if a == mount["mountPath"] else a for a in container["args"]]
    settled = run_options(documents, tmp_path)
    # then it serves the certificate of the folder the Secret is mounted on
    assert settled.settings.metrics_secure is True and settled.settings.metrics_cert_dir == str(tmp_path)
    volume = next(v for v in pod["volumes"] if v["name"] == "metrics-certs")
    assert volume["secret"]["secretName"] == "metrics-tls" and mount["readOnly"] is True


@pytest.mark.parametrize("secure", ["false", "yes", None])
def test_the_chart_refuses_a_metrics_secure_value_that_is_not_a_boolean(secure: str | None) -> None:
    # when rendered with a metrics.secure that is not true or false, then rendering fails, naming it
    with pytest.raises(helm.HelmError) as refused:
        render({"metrics": {"secure": secure}})
    assert f"metrics.secure: {json.dumps(secure)} is not true or false" in str(refused.value)
