"""What a child actor answers when its step could not be done: an error value, never a crash.

A child crashes only on a bug; an API refusal or an unmet precondition is an answer the program
turns into the DGD's failed status (``message`` is written there as it is, so it says what is wrong
and what to do).
"""

from __future__ import annotations

import msgspec


class StepFailed(msgspec.Struct, frozen=True):
    """The step did not complete; ``message`` says why, for the DGD's Ready condition, and ``reason``
    (when the step classifies its failures, dgd-domain §6.2) is the Ready reason."""

    message: str
    reason: str | None = None
