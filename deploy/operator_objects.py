"""The operator itself: its configuration, Deployment, Services, certificates and disruption budget."""

from __future__ import annotations

from pathlib import Path

import yaml
from install_choices import (
    CONFIG_PATH,
    JSON,
    LEASE_NAME,
    METRICS_CERT_DIR,
    METRICS_PORT,
    PROBE_PORT,
    RESOURCES,
    TERMINATION_GRACE,
    WEBHOOK_CERT_DIR,
    WEBHOOK_PORT,
    Choices,
)
from rbac_rules import CERT_MANAGER


class OperatorObjects(Choices):
    """The operator's own objects of an installation (everything but the namespace and RBAC)."""

    def config(self) -> JSON:
        """The operator configuration file (``dgd.messages.config``)."""
        config: JSON = {
            "apiVersion": "operator.config.dynamo.nvidia.com/v1alpha1",
            "kind": "OperatorConfiguration",
            "server": {
                "metrics": {"bindAddress": "0.0.0.0", "port": METRICS_PORT, "secure": self.metrics_secure},
                "healthProbe": {"bindAddress": "0.0.0.0", "port": PROBE_PORT},
            },
            "leaderElection": {"enabled": True, "id": LEASE_NAME},
            "logging": {"format": "json", "level": "info"},
            "checkpoint": {"enabled": self.checkpoint},
            "mpi": {
                "sshSecretName": "mpi-run-ssh-secret",
                "sshSecretNamespace": self.restricted or self.namespace,
            },
        }
        if not self.grove:
            config["orchestrators"] = {"grove": {"enabled": False}}
        if not self.watch:
            roles = {"planner": "planner", "epp": "epp", "dgdrProfiling": "dgdr-profiling"}
            config["rbac"] = {
                f"{key}ClusterRoleName": f"{self.release}-{suffix}" for key, suffix in roles.items()
            }
        else:
            config["namespace"] = {"restricted": self.restricted}
        return config

    def config_map(self) -> JSON:
        text = yaml.safe_dump(self.config(), sort_keys=False)
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": self.meta(f"{self.release}-config"),
            "data": {"config.yaml": text},
        }

    def container(self) -> JSON:
        """The operator's container: its flags, ports, probes, limits and the config file's mount."""
        # One --namespace flag per watched namespace, in order: the daemon's watched set.
        watching = [arg for watched in self.watch for arg in ("--namespace", watched)]
        probe = {
            "httpGet": {"path": "/healthz", "port": "probes"},
            "periodSeconds": 10,
            "failureThreshold": 3,
        }
        ready = {"httpGet": {"path": "/readyz", "port": "probes"}, "periodSeconds": 5, "failureThreshold": 3}
        container = {
            "name": "operator",
            "image": self.image,
            "imagePullPolicy": "IfNotPresent",
            "args": [
                "run",
                "--config",
                CONFIG_PATH,
                *watching,
                "--log-format",
                "json",
                *self.metrics_args(),
                *self.webhook_args(),
            ],
            "ports": [
                {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
                {"name": "probes", "containerPort": PROBE_PORT, "protocol": "TCP"},
                *self.webhook_ports(),
            ],
            "livenessProbe": {**probe, "initialDelaySeconds": 15},
            "readinessProbe": {**ready, "initialDelaySeconds": 5},
            "resources": RESOURCES,
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "runAsNonRoot": True,
                "capabilities": {"drop": ["ALL"]},
            },
            "volumeMounts": [
                {"name": "config", "mountPath": str(Path(CONFIG_PATH).parent), "readOnly": True},
                {"name": "tmp", "mountPath": "/tmp"},
            ],
        }
        return container

    def deployment(self) -> JSON:
        """``replicas`` copies (leader election) of :meth:`container`, with the certificates mounted that are
        not the operator's own."""
        container = self.container()
        pod = {
            "serviceAccountName": self.release,
            "terminationGracePeriodSeconds": TERMINATION_GRACE,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 65532,
                "runAsGroup": 65532,
                "fsGroup": 65532,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
            "volumes": [
                {"name": "config", "configMap": {"name": f"{self.release}-config"}},
                {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
            ],
        }
        # A metrics certificate someone else manages is mounted.
        if self.metrics_secure and self.metrics_cert_secret:
            mount = {"name": "metrics-certs", "mountPath": METRICS_CERT_DIR, "readOnly": True}
            container["volumeMounts"].append(mount)
            pod["volumes"].append(
                {"name": "metrics-certs", "secret": {"secretName": self.metrics_cert_secret}}
            )
        # cert-manager's certificates are mounted (the operator reads its own Secret through the API).
        if self.webhook and self.cert_manager:
            mount = {"name": "webhook-certs", "mountPath": WEBHOOK_CERT_DIR, "readOnly": True}
            container["volumeMounts"].append(mount)
            pod["volumes"].append(
                {"name": "webhook-certs", "secret": {"secretName": self.webhook_secret_name}}
            )
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": self.meta(self.release),
            "spec": {
                "replicas": self.replicas,
                "selector": {"matchLabels": dict(self.labels)},
                "template": {"metadata": {"labels": dict(self.labels)}, "spec": pod},
            },
        }

    def metrics_args(self) -> list[str]:
        """The metrics certificate's folder, when one is mounted (``secure`` is the config file's)."""
        return (
            ["--metrics-cert-dir", METRICS_CERT_DIR]
            if self.metrics_secure and self.metrics_cert_secret
            else []
        )

    def webhook_args(self) -> list[str]:
        """The daemon's webhook flags: off, or served on every replica and registered by the leader
        through the webhook Service, with the operator's own certificates or cert-manager's."""
        if not self.webhook:
            return ["--webhook-addr", "0"]
        certificates = (
            ["--webhook-cert-dir", WEBHOOK_CERT_DIR]
            if self.cert_manager
            else ["--webhook-secret", f"{self.namespace}/{self.webhook_secret_name}"]
        )
        return [
            "--webhook-addr",
            f":{WEBHOOK_PORT}",
            "--webhook-register",
            "service",
            "--webhook-service",
            f"{self.namespace}/{self.webhook_service_name}",
            *certificates,
            "--webhook-configuration-prefix",
            self.release,
            "--webhook-failure-policy",
            self.failure_policy,
        ]

    def webhook_ports(self) -> list[JSON]:
        return (
            [{"name": "webhook-server", "containerPort": WEBHOOK_PORT, "protocol": "TCP"}]
            if self.webhook
            else []
        )

    def metrics_service(self) -> JSON:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": self.meta(f"{self.release}-metrics"),
            "spec": {
                "selector": dict(self.labels),
                "ports": [
                    {
                        "name": "metrics",
                        "port": METRICS_PORT,
                        "targetPort": "metrics",
                        "protocol": "TCP",
                        "appProtocol": "https" if self.metrics_secure else "http",
                    }
                ],
            },
        }

    def webhook_service(self) -> JSON:
        """What the API server calls the webhooks through: 443 to every replica's webhook port."""
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": self.meta(self.webhook_service_name),
            "spec": {
                "selector": dict(self.labels),
                "ports": [
                    {"name": "webhook-server", "port": 443, "targetPort": "webhook-server", "protocol": "TCP"}
                ],
            },
        }

    def cert_manager_objects(self) -> list[JSON]:
        """cert-manager's part: a self-signed Issuer makes a CA (ten years, like the operator's own), a CA
        Issuer signs the serving certificate for the webhook Service's names, kept in the Secret the pods
        mount (``tls.crt``, ``tls.key`` and ``ca.crt``, the bundle the leader registers)."""
        selfsigned, ca = f"{self.release}-selfsigned", f"{self.release}-webhook-ca"
        host = f"{self.webhook_service_name}.{self.namespace}.svc"
        key = {"algorithm": "ECDSA", "size": 256}

        def issuer(name: str, spec: JSON) -> JSON:
            return {
                "apiVersion": f"{CERT_MANAGER}/v1",
                "kind": "Issuer",
                "metadata": self.meta(name),
                "spec": spec,
            }

        def certificate(name: str, spec: JSON, issued_by: str) -> JSON:
            reference = {"name": issued_by, "kind": "Issuer", "group": CERT_MANAGER}
            return {
                "apiVersion": f"{CERT_MANAGER}/v1",
                "kind": "Certificate",
                "metadata": self.meta(name),
                "spec": {**spec, "privateKey": key, "issuerRef": reference},
            }

        return [
            issuer(selfsigned, {"selfSigned": {}}),
            certificate(
                ca, {"isCA": True, "commonName": ca, "secretName": ca, "duration": "87600h"}, selfsigned
            ),
            issuer(ca, {"ca": {"secretName": ca}}),
            certificate(
                f"{self.release}-webhook-server",
                {
                    "secretName": self.webhook_secret_name,
                    "dnsNames": [host, f"{host}.cluster.local"],
                    "usages": ["digital signature", "server auth"],
                },
                ca,
            ),
        ]

    def disruption_budget(self) -> JSON:
        """At most one replica evicted at a time (a node drain waits for the other to lead), so a voluntary
        disruption never leaves the webhooks without a replica to answer."""
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": self.meta(self.release),
            "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(self.labels)}},
        }

    def namespace_object(self) -> JSON:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
