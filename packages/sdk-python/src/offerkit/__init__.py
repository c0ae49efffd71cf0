"""The offerkit SDK: typed clients for the offerkit API, generated from its route table.

`SecretClient` (server side), `PublishableClient` and `AccountTokenClient` (browser-safe credentials), and their
`Async...` variants; one error class per status; lists that page; `verify_webhook` for deliveries;
`SecretClient.local()` for access checks from memory kept fresh by the change stream (`stream_changes`).
"""

from ._client import (
    AccountTokenClient,
    AccountTokenInfo,
    AsyncAccountTokenClient,
    AsyncPublishableClient,
    AsyncSecretClient,
    PublishableClient,
    SecretClient,
    decode_account_token,
)
from ._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    LimitReachedError,
    NotFoundError,
    OfferkitError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    WebhookVerificationError,
)
from ._generated import names as _names
from ._generated.models import WEBHOOK_EVENT_TYPES, UnknownWebhookEvent, WebhookEvent, WebhookEventType
from ._generated.names import *  # noqa: F403
from ._generated.operations import OPERATIONS
from ._local import LocalEvaluator, UnknownPolicy
from ._local_async import AsyncLocalEvaluator
from ._local_buffer import BufferedUsage
from ._local_state import LocalStats
from ._models import OfferkitModel
from ._operation import Operation
from ._pagination import AsyncCursorPage, AsyncPage, AsyncPaginator, CursorPage, Page
from ._response import APIResponse, RateLimit, ResponseInfo
from ._stream import ChangeEvent, ChangeStream, stream_changes
from ._types import NOT_GIVEN, NotGiven
from ._version import __version__
from ._webhooks import HeadersLike, sign_webhook, verify_webhook

__all__ = [
    "NOT_GIVEN",
    "OPERATIONS",
    "WEBHOOK_EVENT_TYPES",
    "APIConnectionError",
    "APIError",
    "APIResponse",
    "APITimeoutError",
    "AccountTokenClient",
    "AccountTokenInfo",
    "AsyncAccountTokenClient",
    "AsyncCursorPage",
    "AsyncLocalEvaluator",
    "AsyncPage",
    "AsyncPaginator",
    "AsyncPublishableClient",
    "AsyncSecretClient",
    "AuthenticationError",
    "BadRequestError",
    "BufferedUsage",
    "ChangeEvent",
    "ChangeStream",
    "ConflictError",
    "CursorPage",
    "HeadersLike",
    "InternalServerError",
    "LimitReachedError",
    "LocalEvaluator",
    "LocalStats",
    "NotFoundError",
    "NotGiven",
    "OfferkitError",
    "OfferkitModel",
    "Operation",
    "Page",
    "PermissionDeniedError",
    "ProviderError",
    "PublishableClient",
    "RateLimit",
    "RateLimitError",
    "ResponseInfo",
    "SecretClient",
    "UnknownPolicy",
    "UnknownWebhookEvent",
    "WebhookEvent",
    "WebhookEventType",
    "WebhookVerificationError",
    "__version__",
    "decode_account_token",
    "sign_webhook",
    "stream_changes",
    "verify_webhook",
]
__all__ += _names.__all__
