"""The real API server's verdict on the broken-manifest corpus and on upstream's DGD files equals
``dgd-operator validate``'s (issue 32): every file is put to one control plane, with our CRDs installed
and our webhooks registered, as ``kubectl create --dry-run=server --validate=strict -f FILE`` (the raw
file, as a user would), and each refusal names the field ``validate`` names.

``tests/unit/cli/test_corpus_parity.py`` holds ``validate`` and ``sim apply`` to the same verdicts; the
two together put every case through all three. The corpus is the files of ``tests/corpus/invalid`` and
the cases ``tests/corpus/generated.py`` writes at test time (annotations of 1 MiB and 5 MiB, a 4 MiB pod
template). Where kubectl reads a file otherwise than the API server would, the file's text also goes to
the server as it is (``docs/decisions.md``, "The corpus on the real API server").

A request over the server's limit (3 MiB: the 5 MiB annotation, the 4 MiB pod template) is refused with
a 413 before anything in it is validated, so the server names no field: what is compared is the verdict
(refused, by the server as by ``validate``) and that the server said why (the limit); that ``validate``
names the size, the field and what is allowed is held by its stated errors
(``tests/unit/domain/test_validation.py``) and by ``tests/unit/cli/test_corpus_parity.py``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from dgd.cli import main
from dgd.cluster.errors import AlreadyExists, NotFound
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.resources import CLUSTER_TOPOLOGY_BINDING, DGD
from dgd.messages.meta_validation import REQUEST_LIMIT
from tests.conftest import kubectl
from tests.corpus.generated import GeneratedCase, generated_cases
from tests.e2e.operators import Operators
from tests.real.controlplane import ControlPlane
from tests.real.harness import LEASE_NS, RealCluster, ensure_namespace, new_namespace
from tests.real.test_admission import registered
from tests.real.test_parity_topology import binding
from tests.real.test_rest import Call, real_server
from tests.upstream import UPSTREAM, dgd_files

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "invalid"
#: The ClusterTopologyBinding the corpus's KV-transfer policies name: it exists, so that each of those
#: cases is refused for its own mistake, not for a binding that is not there.
TOPOLOGY = "datacenter"
#: ``validate``'s line for a refused document, ``FILE#INDEX KIND NAME: error: ERROR``, and the field an
#: error names (``ERROR`` is ``FIELD: MESSAGE``, or a message alone).
_REFUSAL = re.compile(r"^\S+#\d+ .*?: error: (?P<error>.*)$")
_FIELD = re.compile(r"^(?P<field>(?:apiVersion|kind|metadata|spec)(?:\.[A-Za-z][\w-]*|\[[^\]]*\])*): ")
#: Where the server names another field than ``validate`` does, and why. A v1alpha1 DGD reaches our
#: webhooks converted to v1beta1 (as upstream's), so they name the v1beta1 field; ``validate`` names
#: the field the user wrote.
OTHER_FIELD = {
    "v1alpha1-component-type-unknown": ("spec.services[Worker].componentType", "spec.components[1].type"),
    # kubectl finds no resource for the version before anything reaches the server, and says which
    "api-version-unknown": ("apiVersion", 'version "nvidia.com/v2"'),
}
#: Files kubectl reads otherwise than the API server: kubectl turns YAML into JSON itself, keeping the
#: last of two equal keys, so the server never sees the duplicate; their text is sent as it is too.
KUBECTL_READS_OTHERWISE = {"yaml-duplicate-key": 'line 11: key "type" already set in map'}


class Verdict(NamedTuple):
    """Whether a file was refused, and the words that said so."""

    refused: bool
    said: str


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def server(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory, anyio_backend: object
) -> AsyncIterator[RealCluster]:
    """One control plane for every case: a namespace of its own, the chart's RBAC, the binding the
    corpus names, and a daemon serving our webhooks and registering them (removed afterwards)."""
    directory = tmp_path_factory.mktemp("corpus-parity")
    async with await KubeCluster.from_config(control_plane.kubeconfig, qps=None) as kube:
        await ensure_namespace(kube, LEASE_NS)
        real = RealCluster(control_plane, kube, await new_namespace(kube, "corpus"))
        rbac = ROOT / "deploy" / "rbac" / "cluster-wide.yaml"
        applied = kubectl(control_plane, "apply", "--server-side", "-f", str(rbac))
        assert applied.returncode == 0, applied.stderr.decode()
        daemons = Operators(real, directory)  # type: ignore[arg-type]
        try:
            with suppress(AlreadyExists):
                await kube.create(CLUSTER_TOPOLOGY_BINDING, binding(TOPOLOGY))
            async with registered(real, daemons, directory):
                yield real
        finally:
            daemons.stop_all()
            with suppress(NotFound):
                await kube.delete(CLUSTER_TOPOLOGY_BINDING.key(None, TOPOLOGY))


def validated(argument: str, capsys: pytest.CaptureFixture[str]) -> tuple[bool, list[str]]:
    """(``validate`` refused the file, the errors it printed for its documents)."""
    capsys.readouterr()
    code = main(["validate", argument])
    out = capsys.readouterr()
    errors = [m["error"] for line in (out.out + out.err).splitlines() if (m := _REFUSAL.match(line))]
    return code != 0, errors


def dry_run(real: RealCluster, path: Path | None = None, *, text: bytes | None = None) -> Verdict:
    """``kubectl create --dry-run=server --validate=strict`` of the file ``path`` (or of ``text``)."""
    done = kubectl(real.plane, "create", "--dry-run=server", "--validate=strict", "-n", real.namespace,
                   "-f", "-" if path is None else str(path), input=text)  # fmt: skip
    return Verdict(done.returncode != 0, (done.stdout + done.stderr).decode())


async def sent_as_it_is(real: RealCluster, path: Path) -> Verdict:
    """The file's text as the body of a strict server-side dry-run create of a DGD (YAML, unparsed)."""
    call = Call("POST", f"/apis/{DGD.api_version}/namespaces/{{ns}}/dynamographdeployments",
                {"dryRun": "All", "fieldValidation": "Strict"}, path.read_text(encoding="utf-8"),
                "application/yaml")  # fmt: skip
    async with real_server(real.plane) as api:
        code, body = await api.send(call, real.namespace)
    return Verdict(code >= 400, str(body))


def field_of(error: str) -> str | None:
    """The field a ``validate`` error names (``None``: the error is about the document as a whole)."""
    match = _FIELD.match(error)
    return match["field"] if match else None


def names(said: str, field: str) -> bool:
    """Whether the server's words name ``field``: as ``validate`` writes it, with map keys as the
    server writes them (``limits.nvidia.com/gpu`` for ``limits[nvidia.com/gpu]``), or, for an entry
    of a map, the map (the server names a bad label key as ``metadata.labels: Invalid value: KEY``)."""
    dotted = re.sub(r"\[([^\]]*[^\d\]][^\]]*)\]", r".\1", field)
    entry = re.fullmatch(r"(?P<map>.*)\[[^\]]*[^\d\]][^\]]*\]", field)
    named_map = entry is not None and re.search(re.escape(entry["map"]) + r"(?![\w.\[])", said) is not None
    return field in said or dotted in said or named_map


def _cases() -> Iterator[Any]:
    for path in sorted(CORPUS.glob("*.yaml")):
        yield pytest.param(path, id=path.stem)
    for case in generated_cases():
        yield pytest.param(case, id=case.name)
    for path in dgd_files():
        yield pytest.param(path, id=str(path.relative_to(UPSTREAM)))


@pytest.mark.parametrize("case", list(_cases()))
async def test_the_real_api_server_gives_each_file_the_verdict_validate_gives(
    server: RealCluster, case: Path | GeneratedCase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given what validate says of a corpus case or an upstream file of DGDs
    path = case if isinstance(case, Path) else case.write(tmp_path)
    refused, errors = validated(str(path), capsys)

    # when the file goes to the real API server as a strict server-side dry run
    real = dry_run(server, path)
    if path.stem in KUBECTL_READS_OTHERWISE:
        # (kubectl took it as it reads it; its text as it is is what the server refuses)
        assert not real.refused, real.said
        real = await sent_as_it_is(server, path)
        assert KUBECTL_READS_OTHERWISE[path.stem] in real.said, real.said

    # then the server refuses exactly what validate refuses
    assert real.refused == refused, real.said
    if isinstance(case, GeneratedCase) and case.too_large:
        # (refused for its size before it was validated: the verdict is compared, and the server's why)
        assert f"limit is {REQUEST_LIMIT}" in real.said, real.said
        return
    # and names each field validate names
    for error in errors:
        field = field_of(error)
        if field is not None:
            ours, theirs = OTHER_FIELD.get(path.stem, (field, field))
            assert field == ours
            assert names(real.said, theirs), f"{theirs} in {real.said}"
