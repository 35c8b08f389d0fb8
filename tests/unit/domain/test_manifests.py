"""Manifests written by ``dump_manifests`` read back the same in Go's YAML (kubectl, the API server)."""

from __future__ import annotations

import re

import pytest
import yaml

from dgd.domain.manifests import dump_manifests, load_manifests


class GoYAML(yaml.SafeLoader):
    """PyYAML's loader with the YAML 1.1 booleans it leaves out and go-yaml reads: y, Y, n, N."""


GoYAML.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


@pytest.mark.parametrize("text", ["y", "Y", "n", "N", "yes", "No", "on", "OFF", "true", "False", "~", "1e3"])
def test_a_string_go_would_read_as_another_type_is_quoted(text: str) -> None:
    # given an env var whose value is a string Go's YAML 1.1 would resolve to a bool, null or number
    document = {"kind": "ConfigMap", "env": [{"name": "NIXL_TELEMETRY_ENABLE", "value": text}]}

    # when it is written
    written = dump_manifests([document])

    # then Go's reading and ours both get the string back
    assert yaml.load(written, Loader=GoYAML)["env"][0]["value"] == text
    assert load_manifests(written) == [document]
