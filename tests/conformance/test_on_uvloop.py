"""A subset of the suite again, on uvloop (the daemon's event loop): CRUD, conflicts, GC and watches.

The tests are the same functions, imported; only the ``anyio_backend`` fixture differs.
"""

from __future__ import annotations

import pytest

from tests.conformance.test_crud import (
    test_create_assigns_uid_resource_version_creation_timestamp_and_generation_one,
    test_replace_with_a_stale_resource_version_is_conflict,
)
from tests.conformance.test_faults import test_injected_latency_delays_the_request_before_it_runs
from tests.conformance.test_garbage import test_foreground_deletion_waits_for_blocking_dependents
from tests.conformance.test_watch import (
    test_idle_watch_with_bookmarks_gets_a_bookmark_to_resume_from,
    test_slow_watcher_is_dropped_and_resumes_without_loss,
    test_watch_from_a_resource_version_delivers_later_changes_in_order,
)

__all__ = [
    "test_create_assigns_uid_resource_version_creation_timestamp_and_generation_one",
    "test_foreground_deletion_waits_for_blocking_dependents",
    "test_idle_watch_with_bookmarks_gets_a_bookmark_to_resume_from",
    "test_injected_latency_delays_the_request_before_it_runs",
    "test_replace_with_a_stale_resource_version_is_conflict",
    "test_slow_watcher_is_dropped_and_resumes_without_loss",
    "test_watch_from_a_resource_version_delivers_later_changes_in_order",
]


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, bool]]:
    return ("asyncio", {"use_uvloop": True})
