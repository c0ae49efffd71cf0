"""Small types the generated methods share: the "not given" marker and a call's options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal


class NotGiven:
    """The default of an optional argument: left out of the request (`None` sends JSON null, where it means
    something: `max=None` is an unlimited limit)."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> Literal[False]:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Final = NotGiven()


@dataclass(frozen=True)
class RequestOptions:
    """Options of one call; each overrides the client's."""

    timeout: float | None = None
    """Seconds to wait for each attempt (connecting, sending, each read)."""
    max_retries: int | None = None
    extra_headers: Mapping[str, str] | None = None
    idempotency_key: str | None = None
    """The `Idempotency-Key` of this call (POSTs get a generated one unless the client's `idempotency_keys` is off)."""
