"""The plain manifests: committed as generated, secure by default, and wired to what the daemon serves."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from dgd.cli.run import add_command, options
from dgd.messages.config import load_config
from tests.unit.deploy.generator import DEPLOY, committed, find, generate

BUNDLES = ["manifests/cluster-wide.yaml", "manifests/namespace-restricted.yaml"]


def test_the_committed_files_are_what_the_generator_writes() -> None:
    # given every file the generator writes, and what is committed
    for relative, text in generate.files().items():
        # then each is committed with the same text (run `make manifests` after changing deploy/generate.py)
        assert (DEPLOY / relative).read_text(encoding="utf-8") == text, f"deploy/{relative} is stale"
    # and the check mode agrees
    assert generate.main(["--check"]) == 0


def test_a_stale_file_is_reported_by_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # given a deploy directory where one generated file was edited by hand
    for relative, text in generate.files().items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    (tmp_path / "rbac/cluster-wide.yaml").write_text("# edited\n", encoding="utf-8")
    monkeypatch.setattr(generate, "DEPLOY", tmp_path)
    # when checked, then it fails
    assert generate.main(["--check"]) == 1


def deployment(bundle: str) -> dict[str, Any]:
    return find(committed(bundle), "Deployment", generate.RELEASE)


@pytest.mark.parametrize("bundle", BUNDLES)
def test_the_operator_runs_unprivileged_on_a_read_only_root_filesystem(bundle: str) -> None:
    # given the operator's pod
    pod = deployment(bundle)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    security = container["securityContext"]
    # then it runs as a non-root user, with no capability, no privilege escalation, a read-only root
    # filesystem and the runtime's default seccomp profile
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert security["runAsNonRoot"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    # and it asks for resources and is limited
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    # and its only writable place is a small scratch directory
    writable = [m for m in container["volumeMounts"] if not m.get("readOnly")]
    assert [m["mountPath"] for m in writable] == ["/tmp"]


@pytest.mark.parametrize("bundle", BUNDLES)
def test_two_replicas_run_with_leader_election_json_logs_and_the_mounted_config(
    bundle: str, tmp_path: Path
) -> None:
    # given the Deployment and the configuration it mounts
    spec = deployment(bundle)["spec"]
    documents = committed(bundle)
    text = find(documents, "ConfigMap", f"{generate.RELEASE}-config")["data"]["config.yaml"]
    (container,) = spec["template"]["spec"]["containers"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    assert f"{mount['mountPath']}/config.yaml" == generate.CONFIG_PATH
    # when `dgd-operator run` parses its arguments with that file
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args([str(a).replace(generate.CONFIG_PATH, str(path)) for a in container["args"]])
    settled = options(args)
    # then two replicas share one lease, log JSON, and serve metrics and probes where the pod says
    assert spec["replicas"] == 2
    assert settled.settings.leader_elect is True and settled.settings.lease_name == generate.LEASE_NAME
    assert settled.log_format == "json"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert settled.settings.metrics_address.endswith(f":{ports['metrics']}")
    assert settled.settings.probe_address.endswith(f":{ports['probes']}")
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}
    # and the pod has time to drain its reconciles and hand its lease over before it is killed
    grace = spec["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= settled.settings.shutdown_timeout + settled.settings.timing.renew_deadline
    # and the metrics Service selects these pods
    service = find(documents, "Service", f"{generate.RELEASE}-metrics")
    assert (
        service["spec"]["selector"]
        == spec["selector"]["matchLabels"]
        == spec["template"]["metadata"]["labels"]
    )
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"


def test_the_restricted_bundle_watches_only_its_namespace_and_keeps_the_mpi_key_there(tmp_path: Path) -> None:
    # given the two bundles' configurations
    wide = load_config(
        find(committed(BUNDLES[0]), "ConfigMap", f"{generate.RELEASE}-config")["data"]["config.yaml"]
    )
    narrow = load_config(
        find(committed(BUNDLES[1]), "ConfigMap", f"{generate.RELEASE}-config")["data"]["config.yaml"]
    )
    # then the cluster-wide operator watches everything and binds the ClusterRoles the bundle installs
    assert wide.namespace.restricted == ""
    roles = {d["metadata"]["name"] for d in committed(BUNDLES[0]) if d["kind"] == "ClusterRole"}
    assert {wide.rbac.planner_cluster_role_name, wide.rbac.epp_cluster_role_name} <= roles
    # and the restricted one watches its own namespace, where its MPI key Secret lives too
    assert narrow.namespace.restricted == narrow.mpi.ssh_secret_namespace == generate.NAMESPACE
    # and only the restricted Deployment names its watched namespace as a flag
    wide_args, narrow_args = (
        deployment(b)["spec"]["template"]["spec"]["containers"][0]["args"] for b in BUNDLES
    )
    assert "--namespace" not in wide_args
    assert narrow_args.count("--namespace") == 1
    assert narrow_args[narrow_args.index("--namespace") + 1] == generate.NAMESPACE


def test_an_installation_watching_two_namespaces_grants_the_same_roles_in_each() -> None:
    # given an installation restricted to two namespaces
    install = generate.Install(watch=("team-a", "team-b"))
    release = generate.RELEASE
    # when its objects are made
    documents = install.manifests()
    # then nothing is cluster-scoped but the operator's own Namespace
    assert {d["kind"] for d in documents if "namespace" not in d["metadata"]} == {"Namespace"}
    # and each watched namespace holds the operator's two Roles, the planner's identity and their bindings
    for namespace in install.watch:
        objects = {
            (d["kind"], d["metadata"]["name"]): d
            for d in documents
            if d["metadata"].get("namespace") == namespace
        }
        assert set(objects) == {
            ("Role", release),
            ("RoleBinding", release),
            ("Role", f"{release}-delegated"),
            ("RoleBinding", f"{release}-delegated"),
            ("ServiceAccount", "planner-serviceaccount"),
            ("Role", "planner-role"),
            ("RoleBinding", "planner-binding"),
        }
        assert objects["Role", release]["rules"] == install.operator_rules()
        assert objects["Role", f"{release}-delegated"]["rules"] == install.delegated_rules()
        # bound to the operator's ServiceAccount in its own namespace, and to the planner's there
        operator = {"kind": "ServiceAccount", "name": release, "namespace": generate.NAMESPACE}
        assert objects["RoleBinding", release]["subjects"] == [operator]
        assert objects["RoleBinding", f"{release}-delegated"]["subjects"] == [operator]
        planner = {"kind": "ServiceAccount", "name": "planner-serviceaccount", "namespace": namespace}
        assert objects["RoleBinding", "planner-binding"]["subjects"] == [planner]
    # and the operator is given both namespaces in order, the first being its config's switch and MPI home
    (container,) = find(documents, "Deployment", release)["spec"]["template"]["spec"]["containers"]
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    assert parser.parse_args(container["args"]).namespace == ["team-a", "team-b"]
    config = load_config(find(documents, "ConfigMap", f"{release}-config")["data"]["config.yaml"])
    assert config.namespace.restricted == config.mpi.ssh_secret_namespace == "team-a"


@pytest.mark.parametrize("watch", ["team-a", ("team-a", ""), ("team-a", "team-a")])
def test_an_installation_refuses_a_watch_that_is_not_distinct_namespace_names(watch: Any) -> None:
    # when an installation is asked to watch a bare string, an empty name or a name twice, then it refuses
    with pytest.raises(ValueError, match="distinct, non-empty namespace names"):
        generate.Install(watch=watch)


@pytest.mark.parametrize("bundle", BUNDLES)
def test_a_bundle_applies_in_order_into_its_namespace(bundle: str) -> None:
    # given a bundle
    documents = committed(bundle)
    # then it starts with the namespace every namespaced object of it lives in
    assert documents[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": generate.NAMESPACE}}
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    assert {d["metadata"]["namespace"] for d in documents if d["kind"] not in cluster_scoped} == {
        generate.NAMESPACE
    }
    # and the pod runs as the ServiceAccount the RBAC binds
    account = deployment(bundle)["spec"]["template"]["spec"]["serviceAccountName"]
    assert find(documents, "ServiceAccount", account)["metadata"]["namespace"] == generate.NAMESPACE
