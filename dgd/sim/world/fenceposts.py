"""A Deployment's rolling-update limits as kube-controller-manager resolves them
(``deploymentutil.ResolveFenceposts``): maxSurge rounds up, maxUnavailable rounds down, and when both
come to 0 maxUnavailable is 1 so a rollout can still proceed."""

from __future__ import annotations

DEFAULT_LIMIT = "25%"


def scaled_value(value: int | str | None, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"N%"`` of ``total`` rounded as asked."""
    if value is None:
        value = DEFAULT_LIMIT
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError(
            f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}"
        )
    percent = int(value[:-1])
    scaled = percent * total
    return -(-scaled // 100) if round_up else scaled // 100


def resolve_fenceposts(
    max_surge: int | str | None, max_unavailable: int | str | None, desired: int
) -> tuple[int, int]:
    """(surge, unavailable) for ``desired`` replicas."""
    surge = scaled_value(max_surge, desired, round_up=True)
    unavailable = scaled_value(max_unavailable, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable
