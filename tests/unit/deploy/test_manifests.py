"""The plain manifests: committed as generated, secure by default, and wired to what the daemon serves."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from dgd.cli.run import Options, add_command, options
from dgd.daemon.registration import configurations
from dgd.domain.admission.config import load_config
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
    # and the metrics are served over HTTPS to authorised scrapers, with a certificate of the pod's own
    assert settled.settings.metrics_secure is True and settled.settings.metrics_cert_dir is None
    assert service["spec"]["ports"][0]["appProtocol"] == "https"


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
    # then nothing is cluster-scoped but the operator's own Namespace, its webhooks' registration and its
    # secure metrics' reviews and reader role (cluster-scoped by nature)
    assert {(d["kind"], d["metadata"]["name"]) for d in documents if "namespace" not in d["metadata"]} == {
        ("Namespace", generate.NAMESPACE),
        ("ClusterRole", install.webhook_cluster_role_name),
        ("ClusterRoleBinding", install.webhook_cluster_role_name),
        ("ClusterRole", install.metrics_auth_cluster_role_name),
        ("ClusterRoleBinding", install.metrics_auth_cluster_role_name),
        ("ClusterRole", install.metrics_reader_cluster_role_name),
    }
    # and each watched namespace holds the operator's two Roles, the planner's and the endpoint picker's
    # identities (supplement §2.3) and their bindings
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
            ("ServiceAccount", "epp-serviceaccount"),
            ("Role", "epp-role"),
            ("RoleBinding", "epp-binding"),
        }
        assert objects["Role", release]["rules"] == install.operator_rules()
        assert objects["Role", f"{release}-delegated"]["rules"] == install.delegated_rules()
        # bound to the operator's ServiceAccount in its own namespace, and to the planner's there
        operator = {"kind": "ServiceAccount", "name": release, "namespace": generate.NAMESPACE}
        assert objects["RoleBinding", release]["subjects"] == [operator]
        assert objects["RoleBinding", f"{release}-delegated"]["subjects"] == [operator]
        planner = {"kind": "ServiceAccount", "name": "planner-serviceaccount", "namespace": namespace}
        assert objects["RoleBinding", "planner-binding"]["subjects"] == [planner]
        epp = {"kind": "ServiceAccount", "name": "epp-serviceaccount", "namespace": namespace}
        assert objects["RoleBinding", "epp-binding"]["subjects"] == [epp]
        # the endpoint picker's Role without the two cluster-scoped reviews (supplement §2.3)
        assert {r["apiGroups"][0] for r in objects["Role", "epp-role"]["rules"]}.isdisjoint(
            {"authentication.k8s.io", "authorization.k8s.io"}
        )
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


def settle(documents: list[dict[str, Any]], tmp_path: Path) -> Options:
    """What `dgd-operator run` settles from the Deployment's arguments, its config file and, when
    cert-manager's are mounted, a certificate directory in their place."""
    (container,) = find(documents, "Deployment", generate.RELEASE)["spec"]["template"]["spec"]["containers"]
    config = tmp_path / "config.yaml"
    config.write_text(
        find(documents, "ConfigMap", f"{generate.RELEASE}-config")["data"]["config.yaml"], encoding="utf-8"
    )
    places = {generate.CONFIG_PATH: str(config), generate.WEBHOOK_CERT_DIR: str(tmp_path)}
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"))
    return options(parser.parse_args([places.get(a, a) for a in container["args"]]))


def granted_names(role: dict[str, Any], resource: str) -> set[str]:
    return {name for r in role["rules"] if resource in r["resources"] for name in r.get("resourceNames", [])}


@pytest.mark.parametrize("bundle", BUNDLES)
def test_every_replica_serves_the_webhooks_behind_their_service_and_the_leader_registers_them_there(
    bundle: str, tmp_path: Path
) -> None:
    # given a bundle, and the webhook settings its Deployment runs the daemon with
    documents = committed(bundle)
    settled = settle(documents, tmp_path)
    webhooks = settled.settings.webhooks
    assert webhooks is not None and webhooks.register == "service" and webhooks.cert_dir is None
    spec = deployment(bundle)["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    # then every replica serves them on the container port the webhook Service sends 443 to
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert webhooks.address == f":{ports['webhook-server']}" == f":{generate.WEBHOOK_PORT}"
    service = find(documents, "Service", webhooks.service_name)
    assert service["metadata"]["namespace"] == webhooks.service_namespace == generate.NAMESPACE
    assert service["spec"]["selector"] == spec["template"]["metadata"]["labels"]
    assert service["spec"]["ports"] == [
        {"name": "webhook-server", "port": 443, "targetPort": "webhook-server", "protocol": "TCP"}
    ]
    # and the leader registers that Service in configurations named as the webhook ClusterRole names them
    restricted = settled.config.namespace.restricted
    registered = configurations(webhooks, b"", url=None, namespaces=(restricted,) if restricted else ())
    for _, configuration in registered:
        for hook in configuration["webhooks"]:
            where = hook["clientConfig"]["service"]
            assert (where["namespace"], where["name"]) == (generate.NAMESPACE, service["metadata"]["name"])
            assert hook["failurePolicy"] == "Fail"
    install = generate.RESTRICTED if restricted else generate.CLUSTER_WIDE
    role = find(documents, "ClusterRole", install.webhook_cluster_role_name)
    assert [c["metadata"]["name"] for _, c in registered] == [
        *granted_names(role, "mutatingwebhookconfigurations"),
        *granted_names(role, "validatingwebhookconfigurations"),
    ]
    # and its own certificates are kept in the Secret its Role lets it read and renew, in its namespace
    secret_role = find(documents, "Role", f"{generate.RELEASE}-webhook")
    assert secret_role["metadata"]["namespace"] == webhooks.secret_namespace == generate.NAMESPACE
    assert granted_names(secret_role, "secrets") == {webhooks.secret_name}


def test_with_the_webhooks_off_the_operator_serves_none_and_is_granted_nothing_for_them(
    tmp_path: Path,
) -> None:
    # given an installation with the webhooks off
    documents = generate.Install(webhook=False).manifests()
    # then the daemon serves no webhook
    assert settle(documents, tmp_path).settings.webhooks is None
    (container,) = find(documents, "Deployment", generate.RELEASE)["spec"]["template"]["spec"]["containers"]
    assert [p["name"] for p in container["ports"]] == ["metrics", "probes"]
    # and nothing of theirs is installed: no Service, no role
    names = {d["metadata"]["name"] for d in documents}
    assert not {name for name in names if "webhook" in name}


def test_with_cert_manager_the_pods_serve_the_certificate_it_makes_for_the_service(tmp_path: Path) -> None:
    # given an installation whose webhook certificates cert-manager makes
    install = generate.Install(cert_manager=True)
    documents = install.manifests()
    settled = settle(documents, tmp_path)
    webhooks = settled.settings.webhooks
    assert webhooks is not None and webhooks.register == "service"
    # then the serving Certificate names the webhook Service as the API server calls it
    serving = find(documents, "Certificate", f"{generate.RELEASE}-webhook-server")["spec"]
    assert serving["dnsNames"] == webhooks.service_names()
    assert webhooks.service_names()[0] == f"{install.webhook_service_name}.{generate.NAMESPACE}.svc"
    # and its Secret is mounted, read-only, where the daemon reads tls.crt, tls.key and ca.crt
    pod = find(documents, "Deployment", generate.RELEASE)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "webhook-certs"]
    assert mount == {"name": "webhook-certs", "mountPath": generate.WEBHOOK_CERT_DIR, "readOnly": True}
    (volume,) = [v for v in pod["volumes"] if v["name"] == "webhook-certs"]
    assert volume["secret"]["secretName"] == serving["secretName"]
    assert "--webhook-secret" not in container["args"]
    # and it is signed by a CA Issuer whose CA a self-signed Issuer made
    ca_issuer = find(documents, "Issuer", serving["issuerRef"]["name"])["spec"]["ca"]
    ca = next(d["spec"] for d in documents if d["kind"] == "Certificate" and d["spec"].get("isCA"))
    assert ca["secretName"] == ca_issuer["secretName"]
    assert find(documents, "Issuer", ca["issuerRef"]["name"])["spec"] == {"selfSigned": {}}
    # and the operator is given no Secret access for them: only the registration's ClusterRole
    assert not [d for d in documents if d["kind"] == "Role" and d["metadata"]["name"].endswith("-webhook")]
    assert find(documents, "ClusterRole", f"{generate.RELEASE}-webhook")


def test_the_failure_policy_chosen_is_the_one_registered(tmp_path: Path) -> None:
    # given an installation that lets writes through while no replica answers
    documents = generate.Install(failure_policy="Ignore").manifests()
    webhooks = settle(documents, tmp_path).settings.webhooks
    assert webhooks is not None
    # then every webhook the leader registers says so
    registered = configurations(webhooks, b"", url=None, namespaces=())
    assert {hook["failurePolicy"] for _, c in registered for hook in c["webhooks"]} == {"Ignore"}
    # and an installation refuses a policy the API server does not know
    with pytest.raises(ValueError, match="failure_policy: one of Fail, Ignore"):
        generate.Install(failure_policy="Retry")
