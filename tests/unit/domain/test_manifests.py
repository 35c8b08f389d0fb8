"""Manifests written by ``dump_manifests`` read back the same in Go's YAML (kubectl, the API server);
``tests/real/test_rendered_objects.py`` checks the same strings with the real kubectl."""

from __future__ import annotations

import pytest

from dgd.domain.manifests import dump_manifests, load_manifests

#: Strings go-yaml v2 reads as a bool or a number that PyYAML reads as strings (PyYAML would write them
#: plain), then some PyYAML already quotes.
GO_NOT_STRINGS = ["y", "Y", "n", "N", "1e3", "123456e7", "0o17", "08", "1_000", ".5", "-5", "0x1F"]
GO_NOT_STRINGS += ["yes", "~"]
#: Strings both read as strings: written plain, as before.
PLAIN = ["--model", "1.2.3", "abc", "v1", "e45", "0.5x", "1e"]


@pytest.mark.parametrize("text", GO_NOT_STRINGS)
def test_a_string_go_would_read_as_another_type_is_quoted(text: str) -> None:
    # given an env var whose value is a string Go's YAML resolves to a bool, null or number
    document = {"kind": "ConfigMap", "env": [{"name": "X", "value": text}]}

    # when it is written
    written = dump_manifests([document])

    # then the value is quoted, and reads back as the same string
    assert f"value: '{text}'\n" in written
    assert load_manifests(written) == [document]


@pytest.mark.parametrize("text", PLAIN)
def test_other_strings_stay_plain(text: str) -> None:
    written = dump_manifests([{"value": text}])
    assert written == f"value: {text}\n"
    assert load_manifests(written) == [{"value": text}]
