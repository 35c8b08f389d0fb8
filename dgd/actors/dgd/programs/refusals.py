"""What this release cannot reconcile, as the terminal failure a program run ends with."""

from __future__ import annotations

from collections.abc import Callable

from dgd.domain.preflight import unsupported
from dgd.domain.projection import FAILED_TO_RECONCILE, Failure
from dgd.domain.render.errors import RenderError
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment


def refuse_unsupported(
    dgd: DynamoGraphDeployment, config: OperatorConfig, *, keep: Callable[[RenderError], bool]
) -> None:
    """Raise the terminal ``Failure`` of every refusal of ``dgd`` (defaulted) under ``config``, before
    any write; ``keep``: the refusals the program reports as a step of its own instead."""
    refused = [problem for problem in unsupported(dgd, config) if not keep(problem)]
    if refused:
        raise Failure(FAILED_TO_RECONCILE, "; ".join(str(problem) for problem in refused), terminal=True)


def keep_none(problem: RenderError) -> bool:
    """No refusal is a step of its own."""
    return False
