"""The worker hashes a rollout records and the DCD names they give (dgd-domain §12.1)."""

from __future__ import annotations

from dgd.domain.rollout import Hashes, completed_annotations, new_generation_hash
from tests.unit.domain.rollout_fixtures import (
    NEW_HASH,
    OLD_HASH,
    V1,
    V2,
)

# Worker hashes (§12.1).


def test_recorded_hashes_are_read_from_the_dgd_annotations_ignoring_empty_values() -> None:
    assert Hashes.of(None) == Hashes(None, None)
    assert Hashes.of({V1: "", V2: ""}) == Hashes(None, None)
    assert Hashes.of({V1: "0123abcd", V2: OLD_HASH}) == Hashes("0123abcd", OLD_HASH)


def test_a_recorded_v2_hash_matches_only_the_desired_hash() -> None:
    assert Hashes(v2=OLD_HASH).matches(OLD_HASH)
    assert not Hashes(v2=OLD_HASH).matches(NEW_HASH)
    assert Hashes(v1="0123abcd", v2=OLD_HASH).matches(OLD_HASH)
    assert not Hashes(v1="0123abcd", v2=OLD_HASH).matches(NEW_HASH)


def test_a_v1_only_hash_matches_unless_it_marks_legacy_dcds() -> None:
    assert Hashes(v1="0123abcd").matches(NEW_HASH)
    assert not Hashes(v1="legacy").matches(NEW_HASH)
    assert not Hashes().matches(NEW_HASH)


def test_dcd_names_carry_the_v1_suffix_while_it_is_recorded() -> None:
    assert Hashes(v1="0123abcd", v2=OLD_HASH).name_suffix() == "0123abcd"
    assert Hashes(v2=OLD_HASH).name_suffix() == OLD_HASH
    assert Hashes().name_suffix() is None


def test_the_new_generation_keeps_the_v1_name_while_it_still_names_the_desired_generation() -> None:
    # v1 + v2 matching: the active DCDs still carry the v1 suffix
    assert new_generation_hash(Hashes("0123abcd", NEW_HASH), NEW_HASH, rolling=False) == "0123abcd"
    assert new_generation_hash(Hashes("0123abcd", NEW_HASH), NEW_HASH, rolling=True) == "0123abcd"
    # v1 only, no rollout: the v1 suffix
    assert new_generation_hash(Hashes("0123abcd", None), NEW_HASH, rolling=False) == "0123abcd"


def test_the_new_generation_takes_the_desired_hash_otherwise() -> None:
    # v2 differs from the desired hash
    assert new_generation_hash(Hashes("0123abcd", OLD_HASH), NEW_HASH, rolling=False) == NEW_HASH
    # a v1-only DGD with an active rollout targets desired v2
    assert new_generation_hash(Hashes("0123abcd", None), NEW_HASH, rolling=True) == NEW_HASH
    # legacy DCDs never name a generation
    assert new_generation_hash(Hashes("legacy", None), NEW_HASH, rolling=False) == NEW_HASH
    assert new_generation_hash(Hashes(None, NEW_HASH), NEW_HASH, rolling=False) == NEW_HASH
    assert new_generation_hash(Hashes(), NEW_HASH, rolling=True) == NEW_HASH


def test_a_completed_v2_generation_drops_the_legacy_name_and_a_v1_named_one_keeps_it() -> None:
    assert completed_annotations(NEW_HASH, NEW_HASH) == {V2: NEW_HASH, V1: None}
    assert completed_annotations("0123abcd", NEW_HASH) == {V2: NEW_HASH}
