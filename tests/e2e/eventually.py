"""Waiting in a test: poll until something holds, never sleep for a fixed time."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

import anyio

T = TypeVar("T")


@overload
async def eventually(check: Callable[[], Awaitable[T | None]], *, timeout: float, what: str) -> T: ...


@overload
async def eventually(check: Callable[[], T | None], *, timeout: float, what: str) -> T: ...


async def eventually(check: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """Poll ``check`` (a function or a coroutine function) until it returns something truthy, and
    return it; fail after ``timeout`` seconds, saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what}")
        await anyio.sleep(0.05)
