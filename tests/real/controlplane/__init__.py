"""A real Kubernetes control plane on loopback: upstream etcd, kube-apiserver and kube-controller-manager.

Used by the real-server test tier (a pytest session fixture) and by ``make kube-up``/``make kube-down``.
It depends on nothing from the ``dgd`` package; keys and certificates come from ``cryptography``.

Guarantees:

* Every listener binds 127.0.0.1 only: etcd's client and peer URLs, the apiserver's secure port; the
  controller manager serves nothing (``--secure-port=0``). Ports are free loopback ports picked at start.
* All traffic is TLS with certificates from a CA made for this run: etcd requires client certificates,
  the apiserver authenticates with client certificates and authorizes with RBAC. The admin kubeconfig
  (``system:masters``) embeds its certificates, so it is valid on its own.
* ``start()`` returns only when the apiserver answers ``/readyz`` and, with the controller manager, when
  the ``default`` ServiceAccount exists in namespace ``default``. If a child exits, or the deadline
  passes, first it stops every child, then raises :class:`ControlPlaneError` with the tail of the logs.
* Each child runs in its own process group (session), its stdout and stderr in ``<state>/logs/``.
  ``stop()`` ends the groups one by one (controller manager, apiserver, then etcd, which the apiserver
  needs to shut down): SIGTERM, then SIGKILL after a grace period. It runs at interpreter
  exit too (``atexit``), unless the run was detached with :meth:`ControlPlane.detach`.
* The state folder records the children (``controlplane.json``), so :func:`stop_recorded` (``down``)
  can end a detached run, and a new start in the same folder first ends a leftover one.

The parts: ``binaries`` (where they are, which release), ``pki`` (the run's CA and certificates),
``processes`` (process groups and the record), ``command_lines`` (each child's flags), ``plane`` (the
run itself), ``__main__`` (the command line).

Command line (run from the repository root)::

    python -m tests.real.controlplane up [--state DIR]    # start in the background, print how to use it
    python -m tests.real.controlplane run [--state DIR]   # same, in the foreground until Ctrl-C
    python -m tests.real.controlplane down [--state DIR]  # stop what `up` started
"""

from __future__ import annotations

from tests.real.controlplane.binaries import (
    KUBE_VERSION_ENV,
    REPO_ROOT,
    Binaries,
    BinariesNotFoundError,
    cache_dir,
    default_state_dir,
    find_binaries,
    kube_version,
    pinned_kube_version,
)
from tests.real.controlplane.command_lines import SERVICE_CIDR
from tests.real.controlplane.pki import CertPair, Pki, make_pki, write_kubeconfig
from tests.real.controlplane.plane import ControlPlane
from tests.real.controlplane.processes import RECORD_FILE, ControlPlaneError, Ports, stop_recorded

__all__ = [
    "KUBE_VERSION_ENV",
    "RECORD_FILE",
    "REPO_ROOT",
    "SERVICE_CIDR",
    "Binaries",
    "BinariesNotFoundError",
    "CertPair",
    "ControlPlane",
    "ControlPlaneError",
    "Pki",
    "Ports",
    "cache_dir",
    "default_state_dir",
    "find_binaries",
    "kube_version",
    "make_pki",
    "pinned_kube_version",
    "stop_recorded",
    "write_kubeconfig",
]
