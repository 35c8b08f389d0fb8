"""The ``run`` command's webhook flags, and the ``WebhookSettings`` they settle to.

Split from ``dgd.cli.run`` (whose flags are many): ``add_webhook_flags`` adds them to ``run``'s parser,
``webhook_settings`` checks them (``Usage`` names the flag that is wrong) and settles them with their
defaults: in a pod, served on every interface and registered through the chart's ``service``; outside
one, served on loopback only and registered by no one (``none``: no Service reaches a laptop, and a
webhook server open to the network that nothing calls is only a risk); the Secret and the Service in
the lease's namespace.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from pathlib import Path
from typing import Any

from dgd.cli.exits import Usage
from dgd.cli.inputs import POD_NAMESPACE_FILE, duration, namespace_problem
from dgd.daemon.registration import REGISTRATIONS, Registration, WebhookSettings
from dgd.daemon.servers import AddressError, parse_address

#: What the API server may do with a write while no replica answers (``failurePolicy``).
FAILURE_POLICIES = ("Fail", "Ignore")
#: An object name that is a DNS subdomain (RFC 1123), as the webhook configurations' names must be.
#: Where the webhooks listen unless ``--webhook-addr`` says: every interface in a pod (the Service
#: reaches them there), loopback outside one.
POD_WEBHOOK_ADDR = ":9443"
LOCAL_WEBHOOK_ADDR = "127.0.0.1:9443"
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def add_webhook_flags(webhooks: Any) -> None:
    """The webhook flags of ``run``, in their argument group."""
    webhooks.add_argument(
        "--webhook-addr",
        metavar="[HOST]:PORT",
        help="where the admission and conversion webhooks are served over HTTPS, by every replica; 0 to "
        f"turn them off (default {POD_WEBHOOK_ADDR} in a pod, every interface; {LOCAL_WEBHOOK_ADDR} outside "
        "a pod, loopback only)",
    )
    webhooks.add_argument(
        "--webhook-cert-dir",
        metavar="DIR",
        help="serve the certificate in DIR/tls.crt and DIR/tls.key (CA bundle: DIR/ca.crt, optional), "
        "managed by someone else (cert-manager) and re-read when it changes; default: the operator "
        "makes its own CA and certificate and keeps them in --webhook-secret",
    )
    webhooks.add_argument(
        "--webhook-secret",
        metavar="NS/NAME",
        help="the Secret that keeps the operator's own certificates, shared by the replicas "
        f"(default: the lease's namespace/{WebhookSettings().secret_name})",
    )
    webhooks.add_argument(
        "--webhook-cert-validity",
        default="8760h",
        metavar="DURATION",
        help="how long the operator's own serving certificates are valid; the leader renews them at two "
        "thirds of that, under the same CA (default 8760h: a year)",
    )
    webhooks.add_argument(
        "--webhook-ca-validity",
        default="87600h",
        metavar="DURATION",
        help="how long the operator's own CA is valid; at two thirds of that the leader rotates it, "
        "registering the old and the new CA together until every replica serves a certificate of the "
        "new one (default 87600h: ten years)",
    )
    webhooks.add_argument(
        "--webhook-register",
        choices=REGISTRATIONS,
        help="how the leader registers the webhooks with the API server: service (the chart's Service, "
        "--webhook-service), url (https://HOST:PORT of --webhook-addr, whose HOST must be an IP address "
        "the API server can reach), none (someone else does); default service in a pod, none outside",
    )
    webhooks.add_argument(
        "--webhook-pod-restore-failure-policy",
        choices=("Ignore", "Fail"),
        default="Ignore",
        help="the failurePolicy registered for the pod checkpoint-restore mutator (registered only under "
        "the checkpoint gate): Ignore creates pods unrestored while the webhook cannot be reached, Fail "
        "refuses every pod create meanwhile (default Ignore)",
    )
    webhooks.add_argument(
        "--webhook-service",
        metavar="NS/NAME",
        help="the webhook Service for service registration "
        f"(default: the lease's namespace/{WebhookSettings().service_name})",
    )
    webhooks.add_argument(
        "--webhook-configuration-prefix",
        metavar="PREFIX",
        help="the webhook configurations the leader registers are PREFIX-mutating and PREFIX-validating "
        "(namespace-restricted: with -<the Secret's namespace> after them); the chart gives its release's "
        f"name (default {WebhookSettings().configuration_prefix})",
    )
    webhooks.add_argument(
        "--webhook-failure-policy",
        choices=FAILURE_POLICIES,
        default=WebhookSettings().failure_policy,
        help="what the API server does with a DGD, DCD or DynamoCheckpoint write while no replica answers "
        "its webhooks: Fail refuses it, Ignore admits it unchecked (default Fail, as upstream)",
    )
    webhooks.add_argument(
        "--operator-principal",
        metavar="USER",
        help="the user this operator writes as, exempt from the rules admission waives for it "
        "(default: who the API server says its credentials are, asked with a SelfSubjectReview)",
    )


def webhook_settings(args: argparse.Namespace, namespace: str) -> WebhookSettings | None:
    """The webhook flags settled (``None``: ``--webhook-addr 0``)."""
    in_a_pod = POD_NAMESPACE_FILE.exists()
    address: str = args.webhook_addr or (POD_WEBHOOK_ADDR if in_a_pod else LOCAL_WEBHOOK_ADDR)
    try:
        where = parse_address(address)
    except AddressError as exc:
        raise Usage(f"--webhook-addr: {exc}") from exc
    if where is None:
        return None
    register: Registration = args.webhook_register or ("service" if in_a_pod else "none")
    if register == "url":
        try:
            ipaddress.ip_address(where[0] or "")
        except ValueError:
            raise Usage(
                f"--webhook-register url: --webhook-addr {address!r} needs an IP address the API "
                "server can reach as its HOST (for example 127.0.0.1:9443), not a name or every interface"
            ) from None
    defaults = WebhookSettings()
    secret_ns, secret_name = _object_name(
        "--webhook-secret", args.webhook_secret, namespace, defaults.secret_name
    )
    service_ns, service_name = _object_name(
        "--webhook-service", args.webhook_service, namespace, defaults.service_name
    )
    if args.webhook_cert_dir is not None and not Path(args.webhook_cert_dir).is_dir():
        raise Usage(f"--webhook-cert-dir: {args.webhook_cert_dir!r} is not a directory")
    prefix = _configuration_prefix(args.webhook_configuration_prefix, secret_ns)
    return WebhookSettings(
        address=address,
        cert_dir=args.webhook_cert_dir,
        secret_namespace=secret_ns,
        secret_name=secret_name,
        register=register,
        service_namespace=service_ns,
        service_name=service_name,
        configuration_prefix=prefix,
        failure_policy=args.webhook_failure_policy,
        pod_restore_failure_policy=args.webhook_pod_restore_failure_policy,
        operator_principal=args.operator_principal or None,
        validity=duration("--webhook-cert-validity", args.webhook_cert_validity),
        ca_validity=duration("--webhook-ca-validity", args.webhook_ca_validity),
    )


def _object_name(flag: str, text: str | None, namespace: str, name: str) -> tuple[str, str]:
    """``NS/NAME`` of a flag, or the defaults."""
    if text is None:
        return namespace, name
    ns, sep, given = text.partition("/")
    problem = namespace_problem(ns) if sep else "is not NS/NAME"
    if problem or not given:
        raise Usage(f"{flag}: {text!r} must be NAMESPACE/NAME (for example {namespace}/{name})")
    return ns, given


def _configuration_prefix(text: str | None, namespace: str) -> str:
    """``--webhook-configuration-prefix``, checked against the longest name it makes, or the default."""
    if text is None:
        return WebhookSettings().configuration_prefix
    longest = f"{text}-validating-{namespace}"
    if not _SUBDOMAIN.fullmatch(text) or len(longest) > 253:
        raise Usage(
            f"--webhook-configuration-prefix: {text!r} is not a name prefix: lower-case letters, digits, "
            f"'-' and '.', starting and ending alphanumeric, with {longest!r} at most 253 characters"
        )
    return text
