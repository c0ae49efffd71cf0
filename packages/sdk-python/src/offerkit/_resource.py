"""What every generated resource class holds: the client's transport."""

from __future__ import annotations

from ._core import AsyncCore, SyncCore


class SyncResource:
    def __init__(self, core: SyncCore) -> None:
        self._core = core


class AsyncResource:
    def __init__(self, core: AsyncCore) -> None:
        self._core = core
