"""Where the memory adapter's timestamps come from, and how the API server writes them.

A ``Clock`` returns seconds since the Unix epoch. The default is the wall clock; the simulation
passes its virtual clock, so creationTimestamp, deletionTimestamp and eventTime replay exactly.
(Waiting — injected latency, bookmark intervals — goes through the event loop instead, which the
virtual clock also drives.)
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from datetime import UTC, datetime

#: Seconds since the Unix epoch.
Clock = Callable[[], float]

wall_clock: Clock = time.time


def rfc3339(seconds: float) -> str:
    """A ``metav1.Time``: whole seconds, UTC, ``YYYY-MM-DDTHH:MM:SSZ``."""
    return _whole_seconds(int(seconds))


@functools.lru_cache(maxsize=64)
def _whole_seconds(seconds: int) -> str:
    # Remembered: a burst of writes stamps the same second again and again.
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(seconds: float) -> str:
    """A ``metav1.MicroTime`` (an Event's ``eventTime``): ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
