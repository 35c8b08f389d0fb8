"""An installation's ServiceAccount and RBAC objects: Roles and ClusterRoles, and their bindings."""

from __future__ import annotations

from install_choices import JSON, Choices
from rbac_rules import (
    ADMISSION,
    CHECKPOINT_RULES,
    CONVERTED_CRDS,
    CORE,
    DELEGATED_RULES,
    DRA,
    EXTENSIONS,
    GROVE,
    GROVE_RULES,
    LEADER_ELECTION_RULES,
    METRICS_AUTH_RULES,
    METRICS_READER_RULES,
    NO_GROVE_RULES,
    OPERATOR_RULES,
    PLANNER_BINDING_RULES,
    RBAC,
    epp_rules,
    planner_rules,
    rule,
    workload_cluster_roles,
)


class RbacObjects(Choices):
    """The RBAC part of an installation, in apply order (:meth:`rbac`)."""

    def operator_rules(self) -> list[JSON]:
        """What the operator calls (see the module); the ClusterRole lookup only cluster-wide."""
        rules = [*OPERATOR_RULES]
        rules += GROVE_RULES if self.grove else NO_GROVE_RULES
        if self.checkpoint:
            rules = [r for r in rules if r["resources"] != ["dynamocheckpoints"]] + CHECKPOINT_RULES
        if not self.watch:
            rules += PLANNER_BINDING_RULES
            rules.append(rule(RBAC, ["clusterroles"], ["get"], self.bound_cluster_roles))
            if self.grove:
                # The ClusterTopologyBinding a KV-transfer policy names (cluster-scoped, any name).
                rules.append(rule(GROVE, ["clustertopologybindings"], ["get"]))
            # The DeviceClass a GMS component names must exist; any class may be named. A restricted
            # operator reads nothing cluster-scoped and does not check it.
            rules.append(rule(DRA, ["deviceclasses"], ["get"]))
        return rules

    def webhook_cluster_rules(self) -> list[JSON]:
        """The registration: its configurations (a create cannot be narrowed to a name) and,
        cluster-wide, the converted CRDs' conversion."""
        mutating, validating = self.webhook_configurations()
        kinds = ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]
        rules = [
            rule(ADMISSION, kinds, ["create"]),
            rule(ADMISSION, kinds[:1], ["get", "update"], [mutating]),
            rule(ADMISSION, kinds[1:], ["get", "update"], [validating]),
        ]
        if not self.watch:
            rules.append(rule(EXTENSIONS, ["customresourcedefinitions"], ["patch"], CONVERTED_CRDS))
        return rules

    def webhook_secret_rules(self) -> list[JSON]:
        """The operator's own certificates: any replica creates their Secret, the leader renews it."""
        return [
            rule(CORE, ["secrets"], ["create"]),
            rule(CORE, ["secrets"], ["get", "update"], [self.webhook_secret_name]),
        ]

    def delegated_rules(self) -> list[JSON]:
        rules = [*DELEGATED_RULES]
        if not self.watch:
            rules.append(rule(RBAC, ["clusterroles"], ["bind"], self.bound_cluster_roles))
        return rules

    def service_account(self, name: str | None = None, namespace: str | None = None) -> JSON:
        """The operator's ServiceAccount, or the one ``name`` in ``namespace``."""
        metadata = self.meta(name or self.release, namespace=namespace)
        return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}

    def rbac(self) -> list[JSON]:
        """The ServiceAccount and every RBAC object of this installation, in apply order."""
        docs = [self.service_account()]
        subject = [{"kind": "ServiceAccount", "name": self.release, "namespace": self.namespace}]
        grants = (
            (self.release, self.operator_rules()),
            (f"{self.release}-delegated", self.delegated_rules()),
        )
        # The operator's grants: cluster-wide, ClusterRoles; restricted, Roles in every watched namespace.
        if not self.watch:
            for name, rules in grants:
                docs += self._cluster_role_bound(name, rules, subject)
        for watched in self.watch:
            for name, rules in grants:
                docs += self._role(name, rules, watched, subject)
        docs += self._role(f"{self.release}-leader-election", LEADER_ELECTION_RULES, self.namespace, subject)
        # The webhooks' registration is cluster-scoped in both modes; their Secret, in the release namespace.
        if self.webhook:
            docs += self._cluster_role_bound(
                self.webhook_cluster_role_name, self.webhook_cluster_rules(), subject
            )
            if not self.cert_manager:
                webhook_secret = self.webhook_secret_rules()
                docs += self._role(f"{self.release}-webhook", webhook_secret, self.namespace, subject)
        # Secure metrics: the reviews are cluster-scoped in both modes; the reader's role is users' to bind.
        if self.metrics_secure:
            docs += self._cluster_role_bound(self.metrics_auth_cluster_role_name, METRICS_AUTH_RULES, subject)
            docs.append(self._cluster_role(self.metrics_reader_cluster_role_name, METRICS_READER_RULES))
        if not self.watch:
            docs += [
                self._cluster_role(name, rules)
                for name, rules in workload_cluster_roles(self.release).items()
            ]
        # Restricted: the operator binds no ClusterRole; the planner's and the endpoint picker's
        # identities are made in each namespace.
        for watched in self.watch:
            for who, rules in (("planner", planner_rules()), ("epp", epp_rules(cluster_wide=False))):
                account = f"{who}-serviceaccount"
                subjects = [{"kind": "ServiceAccount", "name": account, "namespace": watched}]
                docs.append(self.service_account(account, watched))
                docs += self._role(f"{who}-role", rules, watched, subjects, binding=f"{who}-binding")
        return docs

    def _cluster_role_bound(self, name: str, rules: list[JSON], subjects: list[JSON]) -> list[JSON]:
        return [
            self._cluster_role(name, rules),
            {
                "apiVersion": f"{RBAC}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": self.meta(name, namespaced=False),
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
                "subjects": subjects,
            },
        ]

    def _cluster_role(self, name: str, rules: list[JSON]) -> JSON:
        return {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": self.meta(name, namespaced=False),
            "rules": rules,
        }

    def _role(
        self, name: str, rules: list[JSON], namespace: str, subjects: list[JSON], binding: str | None = None
    ) -> list[JSON]:
        return [
            {
                "apiVersion": f"{RBAC}/v1",
                "kind": "Role",
                "metadata": self.meta(name, namespace=namespace),
                "rules": rules,
            },
            {
                "apiVersion": f"{RBAC}/v1",
                "kind": "RoleBinding",
                "metadata": self.meta(binding or name, namespace=namespace),
                "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": name},
                "subjects": subjects,
            },
        ]
