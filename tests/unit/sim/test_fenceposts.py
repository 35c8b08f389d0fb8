"""Rolling-update limits resolved as kube-controller-manager resolves them."""

from __future__ import annotations

import pytest

from dgd.sim.world.fenceposts import resolve_fenceposts, scaled_value


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        (None, None, 4, (1, 1)),  # the default 25%/25%
        (None, None, 3, (1, 0)),  # 0.75: surge rounds up, unavailable rounds down
        ("30%", "30%", 10, (3, 3)),
        ("10%", "10%", 5, (1, 0)),  # 0.5 each: surge 1, unavailable 0 (surge is not 0, so no bump)
        (0, 0, 3, (0, 1)),  # both 0: unavailable becomes 1
        ("0%", "0%", 3, (0, 1)),
        (2, 0, 3, (2, 0)),
    ],
)
def test_resolve_fenceposts(
    surge: int | str | None, unavailable: int | str | None, desired: int, expected: tuple[int, int]
) -> None:
    assert resolve_fenceposts(surge, unavailable, desired) == expected


def test_a_string_that_is_no_percentage_is_refused() -> None:
    with pytest.raises(ValueError, match="not a percentage"):
        scaled_value("3", 10, round_up=True)
