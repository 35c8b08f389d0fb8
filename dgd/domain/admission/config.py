"""Reading the operator configuration file: every misspelt key refused, as a DGD's are.

Decoding alone (``dgd.messages.config``) ignores keys it does not know, so a typo such as
``progresDeadline`` would silently leave the default in force. The file is first walked against the
configuration's schema, the same walk ``validate`` makes of a DGD, so every unknown key is named
with the nearest known one, every bad value with what is allowed, all at once.
"""

from __future__ import annotations

import yaml

from dgd.domain.admission.schema import check
from dgd.messages.config import ConfigError, OperatorConfig, decode_config


def load_config(text: str) -> OperatorConfig:
    """Decode, default and validate a configuration file (YAML or JSON); empty text = all defaults.

    ``ConfigError`` names every problem (``rollout.progresDeadline: unknown field "progresDeadline"
    (did you mean "progressDeadline"?)``); one that is not YAML has the parser's error as its cause.
    """
    try:
        raw = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError("the configuration must be a mapping of keys to values")
    problems = check(raw, OperatorConfig)
    if problems:
        raise ConfigError("; ".join(str(problem) for problem in problems))
    return decode_config(raw)
