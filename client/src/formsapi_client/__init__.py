"""The Python client of the formsapi REST API.

    from formsapi_client import Client, ApiError

    with Client("http://127.0.0.1:8000", "fapi_...") as client:
        for form in client.forms.iter():
            print(form.title, form.response_count)

The models are in formsapi_client.models; errors in formsapi_client.errors.
"""

from formsapi_client._async import AsyncClient, AsyncExport, AsyncFileContent
from formsapi_client._sync import Client, Export, FileContent
from formsapi_client._version import API_VERSION, __version__
from formsapi_client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    ConnectionFailed,
    CursorExpired,
    ExportIncomplete,
    Forbidden,
    FormsapiClientError,
    Gone,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    Unauthorized,
    UnreadableResponse,
    UnsupportedMediaType,
    ValidationFailed,
)
from formsapi_client.webhooks import (
    WebhookVerificationError,
    parse_webhook,
    unwrap_webhook,
    verify_webhook,
)

__all__ = [
    "API_VERSION",
    "ApiError",
    "AsyncClient",
    "AsyncExport",
    "AsyncFileContent",
    "BadRequest",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "CursorExpired",
    "Export",
    "ExportIncomplete",
    "FileContent",
    "Forbidden",
    "FormsapiClientError",
    "Gone",
    "NotFound",
    "PayloadTooLarge",
    "PreconditionFailed",
    "RateLimited",
    "ServerError",
    "ServiceUnavailable",
    "Unauthorized",
    "UnreadableResponse",
    "UnsupportedMediaType",
    "ValidationFailed",
    "WebhookVerificationError",
    "__version__",
    "parse_webhook",
    "unwrap_webhook",
    "verify_webhook",
]
