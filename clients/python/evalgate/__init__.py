"""Evalgate's Python client: ``Evalgate`` (sync) and ``AsyncEvalgate`` over every resource of the API."""

from ._client import AsyncEvalgate, Evalgate
from ._config import ConfigEndpoint, resolve_config
from ._errors import (
    APIConnectionError,
    APIConnectionTimeoutError,
    APIError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    EvalgateError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
    WaitTimeoutError,
)
from ._http import VERSION, RequestOptions
from ._objects import Agreement, MonitorResults, Run, RunComparison, RunResults
from ._pagination import AsyncPage, AsyncPager, Page
from ._upload import UploadProgress
from .prompt_template import PromptVariableError
from .resources.prompts import PROMPT_COMPILED_HEADER, FetchedPrompt
from .testing import assert_run

__version__ = VERSION

__all__ = [
    "Evalgate",
    "AsyncEvalgate",
    "RequestOptions",
    "ConfigEndpoint",
    "resolve_config",
    "Page",
    "AsyncPage",
    "AsyncPager",
    "Run",
    "RunResults",
    "RunComparison",
    "Agreement",
    "MonitorResults",
    "UploadProgress",
    "assert_run",
    "FetchedPrompt",
    "PROMPT_COMPILED_HEADER",
    "PromptVariableError",
    "EvalgateError",
    "ConfigurationError",
    "APIError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "APIConnectionError",
    "APIConnectionTimeoutError",
    "WaitTimeoutError",
]
