"""Which Kubernetes release the real-server tier runs: the pinned one, or ``$DGD_KUBE_VERSION``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import _runs_the_asked_version
from tests.real.controlplane import (
    KUBE_VERSION_ENV,
    REPO_ROOT,
    BinariesNotFoundError,
    cache_dir,
    find_binaries,
    kube_version,
    pinned_kube_version,
)

BUILD = REPO_ROOT / "hack" / "kube" / "build.sh"


def _fake_binaries(folder: Path) -> None:
    folder.mkdir(parents=True)
    for name in ("kube-apiserver", "etcd"):
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)


def test_without_the_variable_the_tier_runs_the_version_build_sh_builds_by_default() -> None:
    # given build.sh's default and the committed go.mod's pin
    default = re.search(r'^DEFAULT_KUBE_VERSION="(v[^"]+)"', BUILD.read_text(), re.MULTILINE)
    assert default is not None

    # then the tier's version is both
    assert kube_version({}) == pinned_kube_version() == default.group(1)
    assert kube_version({KUBE_VERSION_ENV: ""}) == pinned_kube_version()


@pytest.mark.parametrize("raw", ["1.34.12", "v1.34.12", " v1.34.12 "])
def test_the_variable_names_the_cache_folder_with_or_without_its_v(raw: str, tmp_path: Path) -> None:
    env = {KUBE_VERSION_ENV: raw, "XDG_CACHE_HOME": str(tmp_path)}

    assert kube_version(env) == "v1.34.12"
    assert cache_dir(env) == tmp_path / "dgd-operator" / "kube-v1.34.12"


@pytest.mark.parametrize("raw", ["1.34", "latest", "v2.0.0", "v1.34.12-rc.1"])
def test_a_value_that_is_no_release_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(ValueError, match=rf"{KUBE_VERSION_ENV}='{re.escape(raw)}' .*v1\.<minor>\.<patch>"):
        kube_version({KUBE_VERSION_ENV: raw})


def test_binaries_come_from_the_asked_versions_folder(tmp_path: Path) -> None:
    # given binaries for two releases in the cache
    _fake_binaries(tmp_path / "dgd-operator" / "kube-v1.34.12")
    _fake_binaries(tmp_path / "dgd-operator" / f"kube-{pinned_kube_version()}")

    # when the tier is asked for each
    older = find_binaries({KUBE_VERSION_ENV: "1.34.12", "XDG_CACHE_HOME": str(tmp_path)})
    pinned = find_binaries({"XDG_CACHE_HOME": str(tmp_path)})

    # then each comes from its own folder
    assert older.kube_apiserver == tmp_path / "dgd-operator" / "kube-v1.34.12" / "kube-apiserver"
    assert pinned.folder == tmp_path / "dgd-operator" / f"kube-{pinned_kube_version()}"


def test_a_version_not_built_says_how_to_build_it(tmp_path: Path) -> None:
    env = {KUBE_VERSION_ENV: "v1.35.4", "XDG_CACHE_HOME": str(tmp_path)}

    with pytest.raises(BinariesNotFoundError, match=r"kube-v1\.35\.4 .*make kube KUBE_VERSION=v1\.35\.4"):
        find_binaries(env)


@pytest.mark.parametrize("raw", ["1.34", "v1.34.12; rm -rf /", "next"])
def test_build_sh_refuses_a_version_that_is_no_release_before_touching_anything(
    raw: str, tmp_path: Path
) -> None:
    # when build.sh is given a version that is no release (with an empty cache)
    result = subprocess.run(
        ["bash", str(BUILD), raw],
        env={"PATH": "/usr/bin:/bin:/usr/local/go/bin:/usr/local/bin", "XDG_CACHE_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )

    # then it exits non-zero naming the value and the form expected, and creates no cache folder
    assert result.returncode != 0
    assert f"version '{raw}' is not a Kubernetes release" in result.stderr
    assert "v1.<minor>.<patch>" in result.stderr
    assert not (tmp_path / "dgd-operator").exists()


@pytest.mark.parametrize(("asked", "served"), [("1.34.12", "v1.36.5"), ("v1.36.5", "v1.34.12")])
def test_the_tier_fails_when_the_apiserver_is_not_the_asked_release(
    asked: str, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given binaries (from KUBEBUILDER_ASSETS, say) whose apiserver is another release than the one asked for
    monkeypatch.setenv(KUBE_VERSION_ENV, asked)
    plane = SimpleNamespace(apiserver_version=served, binaries=SimpleNamespace(folder=Path("/assets")))

    # then the tier fails, naming both versions
    with pytest.raises(
        pytest.fail.Exception, match=rf"asks for Kubernetes v{asked.removeprefix('v')}.*is {served}"
    ):
        _runs_the_asked_version(plane)  # type: ignore[arg-type]


def test_the_asked_release_or_none_at_all_lets_the_tier_run(monkeypatch: pytest.MonkeyPatch) -> None:
    plane = SimpleNamespace(apiserver_version="v1.34.12", binaries=SimpleNamespace(folder=Path("/cache")))

    monkeypatch.setenv(KUBE_VERSION_ENV, "1.34.12")
    _runs_the_asked_version(plane)  # type: ignore[arg-type]
    monkeypatch.delenv(KUBE_VERSION_ENV)
    _runs_the_asked_version(plane)  # type: ignore[arg-type]
