"""Manifests written by ``dump_manifests`` read back the same in Go's YAML (kubectl, the API server);
``tests/real/test_rendered_objects.py`` checks the same strings with the real kubectl."""

from __future__ import annotations

import pytest

from dgd.domain.manifests import ManifestError, dump_manifests, load_manifests

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


#: Plain scalars and what kubectl sends the API server for them (go-yaml v2, then JSON), where PyYAML's
#: own YAML 1.1 resolvers read something else (and a few they agree on, that must stay so).
AS_KUBECTL_SENDS = [
    ("y", True), ("Y", True), ("n", False), ("N", False), ("1e3", 1000), ("0o17", 15), ("08", 8),
    ("1:30", "1:30"), ("10.0e2", 1000), ("1.0", 1), ("-0b1", -1), ("1e400", "1e400"), ("+7", 7),
]  # fmt: skip


@pytest.mark.parametrize(("text", "sent"), AS_KUBECTL_SENDS)
def test_a_plain_scalar_is_read_as_kubectl_sends_it(text: str, sent: object) -> None:
    # given a plain scalar whose meaning PyYAML and go-yaml v2 disagree on
    # when it is read
    [document] = load_manifests(f"value: {text}\n")

    # then it is the value (and the JSON type) the API server receives from kubectl
    assert document == {"value": sent}
    assert type(document["value"]) is type(sent)


def test_mapping_keys_are_strings_as_in_the_json_kubectl_sends() -> None:
    # given keys YAML reads as an integer and a boolean
    # when they are read
    [document] = load_manifests("1: one\ntrue: yes\n")

    # then both are kept, as the strings JSON has for them
    assert document == {"1": "one", "true": True}


def test_a_float_json_cannot_hold_is_refused_with_its_line() -> None:
    # given an infinity, which kubectl cannot write as JSON
    # when it is read, then it is refused where it stands
    with pytest.raises(ManifestError, match=r"line 2, column 8: '\.inf' is a YAML float JSON cannot hold"):
        load_manifests("a: 1\nlimit: .inf\n")


def test_merge_keys_are_merged_and_overridden_not_duplicates() -> None:
    # given a mapping that merges an anchor and overrides one of its keys
    [document] = load_manifests("base: &b {m: 1, k: 2}\nuse: {<<: *b, m: 3}\n")

    # then the merged keys are there, the own key wins, and no duplicate is reported
    assert document["use"] == {"m": 3, "k": 2}
