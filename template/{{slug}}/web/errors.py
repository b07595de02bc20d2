"""One error envelope for every failure: ``{"error": {"domain", "code", "message"}}``.

Litestar's exception handlers map our typed errors, the framework's own
exceptions and anything unexpected to it. Database trouble (a lock or
statement timeout, a lost or refused connection: ``db.pool.UNAVAILABLE_ERRORS``)
answers 503 ``UNAVAILABLE`` with ``Retry-After``: the request was fine and may be
sent again. Other unexpected errors answer a generic message with the request
id; the log records only the id, the route and the exception's type — never its
message or stack, which may hold provider responses or data.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from litestar import MediaType, Request, Response
from litestar.exceptions import (
    HTTPException,
    MethodNotAllowedException,
    NotFoundException,
    ValidationException,
)
from litestar.status_codes import HTTP_413_REQUEST_ENTITY_TOO_LARGE

from ..db.pool import UNAVAILABLE_ERRORS
from ..errors import (
    Internal,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RequestError,
    SiteError,
    Unavailable,
    ValidationFailed,
)

log = logging.getLogger(__name__)


def request_id(request: Request) -> str:
    return request.scope.get("state", {}).get("request_id", "-")


def envelope(domain: str, code: str, message: str, status: int, headers: dict[str, str] | None = None,
             **extra: Any) -> Response:
    return Response(
        {"error": {"domain": domain, "code": code, "message": message, **extra}},
        status_code=status,
        media_type=MediaType.JSON,
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


def site_error_response(error: SiteError) -> Response:
    return envelope(error.domain, error.code, error.message, error.status, error.headers(), **error.extra)


def handle_site_error(request: Request, error: SiteError) -> Response:
    if isinstance(error, Internal):
        return handle_unexpected(request, error)
    return site_error_response(error)


# msgspec quotes a pattern it did not match; the schema shows the pattern, the message need not.
# msgspec's messages name the field and the rule in the validator's own terms; people read words.
_KINDS = {"str": "text", "int": "a whole number", "float": "a number", "bool": "true or false",
          "object": "an object", "array": "a list", "null": "null", "uuid": "an id"}
_WORDS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (re.compile(r"^Expected `str` matching regex '.*'", re.DOTALL), lambda m: "not in the expected form"),
    (re.compile(r"^Expected `str` of length >= (\d+)"), lambda m: f"must be at least {m[1]} characters"),
    (re.compile(r"^Expected `str` of length <= (\d+)"), lambda m: f"must be at most {m[1]} characters"),
    (re.compile(r"^Expected `(?:array|object)` of length >= (\d+)"), lambda m: f"must have at least {m[1]} items"),
    (re.compile(r"^Expected `(?:array|object)` of length <= (\d+)"), lambda m: f"must have at most {m[1]} items"),
    (re.compile(r"^Expected `(?:int|float)` >= (\S+)"), lambda m: f"must be at least {m[1]}"),
    (re.compile(r"^Expected `(?:int|float)` <= (\S+)"), lambda m: f"must be at most {m[1]}"),
    (re.compile(r"^Expected `(\w+)`, got `(\w+)`"),
     lambda m: f"must be {_KINDS.get(m[1], m[1])}" + (", not a number" if m[2] in ("int", "float") else "")),
    (re.compile(r"^Object missing required field `([^`]+)`"), lambda m: f"{m[1]} is required"),
    (re.compile(r"^Object contains unknown field `([^`]+)`"), lambda m: f"{m[1]} is not a field here"),
]


def _in_words(message: str) -> tuple[str, bool]:
    """The rule in words, and whether it names its own field (then no "key:" goes before it)."""
    message = message.split(" - at `", 1)[0]
    for pattern, words in _WORDS:
        if match := pattern.match(message):
            return words(match), pattern.pattern.startswith("^Object")
    return message, False


def _validation_message(error: ValidationException) -> str:
    # Litestar's extra holds msgspec's messages ("Expected `int`, got `str` - at `$.size`"):
    # they name the field and the expectation, never server internals.
    details = error.extra if isinstance(error.extra, list) else []
    parts = []
    for item in details[:3]:
        if isinstance(item, dict):
            text, names_its_field = _in_words(str(item.get("message", "")).strip())
            key = item.get("key")
            if text:
                parts.append(f"{key}: {text}" if key and key != "data" and not names_its_field else text)
    return "; ".join(parts)[:300] or ValidationFailed.default_message


def handle_http_exception(request: Request, error: HTTPException) -> Response:
    if isinstance(error, ValidationException):
        return site_error_response(ValidationFailed(_validation_message(error)))
    if isinstance(error, NotFoundException):
        return site_error_response(NotFound())
    if isinstance(error, MethodNotAllowedException):
        # RFC 9110: a 405 says which methods the resource has (the router's Allow header).
        allow = (error.headers or {}).get("allow")
        refused = MethodNotAllowed()
        return envelope(refused.domain, refused.code, refused.message, refused.status,
                        {"Allow": allow} if allow else None)
    if error.status_code == HTTP_413_REQUEST_ENTITY_TOO_LARGE:
        return site_error_response(PayloadTooLarge())
    if error.status_code == 400:  # e.g. a body that is not JSON at all
        return site_error_response(ValidationFailed())
    if error.status_code >= 500:
        return handle_unexpected(request, error)
    # Any other framework 4xx: its status, our envelope, a fixed message.
    return envelope(RequestError.domain, "BAD_REQUEST", "The request could not be processed.", error.status_code)


def handle_unexpected(request: Request, error: Exception) -> Response:
    rid = request_id(request)
    if isinstance(error, UNAVAILABLE_ERRORS):
        log.warning("database unavailable (%s) in %s %s (request %s)", type(error).__name__, request.method,
                    request.scope.get("path", "?"), rid)
        return site_error_response(Unavailable())
    log.error(
        "unexpected %s in %s %s (request %s)",
        type(error).__name__,
        request.method,
        request.scope.get("path", "?"),
        rid,
    )
    return site_error_response(Internal(requestId=rid))


EXCEPTION_HANDLERS = {
    SiteError: handle_site_error,
    HTTPException: handle_http_exception,
    Exception: handle_unexpected,
}
