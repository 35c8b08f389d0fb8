"""Why a DGD cannot be rendered: a value naming the field and what to do about it."""

from __future__ import annotations


class RenderError(ValueError):
    """A DGD that passed admission but cannot be turned into objects; ``path`` names the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message
