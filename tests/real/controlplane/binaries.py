"""Where the control-plane binaries are, and which Kubernetes release they are."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parents[3]
ETCD: Final = "etcd"
APISERVER: Final = "kube-apiserver"
CONTROLLER_MANAGER: Final = "kube-controller-manager"
KUBECTL: Final = "kubectl"


class BinariesNotFoundError(FileNotFoundError):
    """The kube-apiserver and etcd binaries are neither in ``$KUBEBUILDER_ASSETS`` nor in the build cache."""


@dataclass(frozen=True)
class Binaries:
    """Paths of the control-plane binaries; the optional ones are ``None`` when the folder lacks them."""

    folder: Path
    kube_apiserver: Path
    etcd: Path
    kube_controller_manager: Path | None
    kubectl: Path | None


#: Names the Kubernetes release to run instead of the pinned one (``make test-k8s KUBE_VERSION=...``).
KUBE_VERSION_ENV: Final = "DGD_KUBE_VERSION"


def pinned_kube_version() -> str:
    """The Kubernetes version ``hack/kube/go.mod`` pins (``v1.36.5``), the tier's default."""
    go_mod = REPO_ROOT / "hack" / "kube" / "go.mod"
    match = re.search(r"^\s*k8s\.io/kubernetes (v\S+)\s*$", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise BinariesNotFoundError(f"{go_mod} does not require k8s.io/kubernetes")
    return match.group(1)


def kube_version(env: Mapping[str, str] | None = None) -> str:
    """The Kubernetes version to run: ``$DGD_KUBE_VERSION`` (``v1.34.12`` or ``1.34.12``) if set, else
    :func:`pinned_kube_version`. Raises :class:`ValueError` naming the variable for anything else."""
    env = os.environ if env is None else env
    raw = env.get(KUBE_VERSION_ENV, "").strip()
    if not raw:
        return pinned_kube_version()
    version = "v" + raw.removeprefix("v")
    if re.fullmatch(r"v1\.\d+\.\d+", version) is None:
        raise ValueError(
            f"{KUBE_VERSION_ENV}={raw!r} is not a Kubernetes release: expected v1.<minor>.<patch> "
            "(e.g. v1.34.12), or unset for the pinned version"
        )
    return version


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where ``hack/kube/build.sh`` puts binaries: ``${XDG_CACHE_HOME:-~/.cache}/dgd-operator/kube-<v>``,
    ``<v>`` being :func:`kube_version`."""
    env = os.environ if env is None else env
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "dgd-operator" / f"kube-{kube_version(env)}"


def default_state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The CLI's state folder: ``${XDG_STATE_HOME:-~/.local/state}/dgd-operator/kube``."""
    env = os.environ if env is None else env
    base = Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "dgd-operator" / "kube"


def find_binaries(env: Mapping[str, str] | None = None) -> Binaries:
    """Locates the binaries: ``$KUBEBUILDER_ASSETS`` if set (the envtest convention), else :func:`cache_dir`.

    Raises :class:`BinariesNotFoundError` unless that folder holds executable ``kube-apiserver`` and ``etcd``.
    """
    env = os.environ if env is None else env
    assets = env.get("KUBEBUILDER_ASSETS")
    folder = Path(assets) if assets else cache_dir(env)

    def executable(name: str) -> Path | None:
        path = folder / name
        return path if path.is_file() and os.access(path, os.X_OK) else None

    apiserver, etcd = executable(APISERVER), executable(ETCD)
    if apiserver is None or etcd is None:
        if assets:
            how = "put them there, or unset KUBEBUILDER_ASSETS to use the build cache"
        elif env.get(KUBE_VERSION_ENV, "").strip():
            how = f"build them with `make kube KUBE_VERSION={kube_version(env)}` (hack/kube/build.sh)"
        else:
            how = (
                "build them with `make kube` (hack/kube/build.sh) "
                "or set KUBEBUILDER_ASSETS to a folder with them"
            )
        source = "$KUBEBUILDER_ASSETS" if assets else "the build cache"
        raise BinariesNotFoundError(f"no executable kube-apiserver and etcd in {folder} ({source}); {how}")
    return Binaries(folder, apiserver, etcd, executable(CONTROLLER_MANAGER), executable(KUBECTL))
