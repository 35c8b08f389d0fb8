"""The checked-in CRD files are what the models generate."""

from __future__ import annotations

import yaml

from dgd.domain.crds import (
    OWNED,
    RESOURCES,
    crd_files,
    owned_crds,
    render_crds_yaml,
)
from tests.upstream import ROOT

DEPLOY_CRDS = ROOT / "deploy" / "crds"


# (b) The checked-in files are what the code generates.


def test_checked_in_crds_are_what_the_models_generate() -> None:
    # Given the files in deploy/crds/ and what the code generates now
    checked_in = {path.name: path.read_text(encoding="utf-8") for path in sorted(DEPLOY_CRDS.glob("*.yaml"))}
    generated = crd_files()
    # Then they are the same files with the same text (run `make crds` after changing a model)
    assert sorted(checked_in) == sorted(generated)
    for name, text in generated.items():
        assert checked_in[name] == text, f"deploy/crds/{name} is stale: run `make crds`"


def test_multi_document_yaml_holds_every_owned_crd_in_order_and_no_grove_crd() -> None:
    # When the CRDs are rendered as one YAML stream
    documents = list(yaml.safe_load_all(render_crds_yaml()))
    # Then it holds exactly the operator's own CRDs, in the stable order of owned_crds
    assert documents == owned_crds()
    assert [d["spec"]["names"]["kind"] for d in documents] == [r.kind for r in OWNED]
    # And none of the simulated cluster's Grove models, which would replace real Grove's schemas
    assert {d["spec"]["group"] for d in documents} == {"nvidia.com"}
    assert [r.group for r in RESOURCES if r not in OWNED] == ["grove.io"] * 3
