"""The site's errors. Each carries a stable ``code``, a ``domain`` and an HTTP status.

The HTTP layer turns any ``SiteError`` into the envelope
``{"error": {"domain", "code", "message"}}`` in one exception handler
(``web/errors.py``). Messages are written for the user and never contain
internal details; callers may pass a more specific safe message.
"""

from __future__ import annotations

from typing import Any, ClassVar


class SiteError(Exception):
    """Base of every error a request can answer with."""

    domain: ClassVar[str] = "request"
    code: ClassVar[str] = "INTERNAL"
    status: ClassVar[int] = 500
    default_message: ClassVar[str] = "Something went wrong."

    def __init__(self, message: str | None = None, **extra: Any) -> None:
        self.message = message or self.default_message
        self.extra = extra
        super().__init__(self.message)

    def headers(self) -> dict[str, str]:
        return {}


# --- request ---------------------------------------------------------------


class RequestError(SiteError):
    domain = "request"


class ValidationFailed(RequestError):
    """The body, query or path did not match the endpoint's schema or rules."""

    code = "VALIDATION_FAILED"
    status = 400
    default_message = "The request is not valid."


class OriginMismatch(RequestError):
    """A mutation came without an Origin header equal to the site's origin."""

    code = "ORIGIN_MISMATCH"
    status = 403
    default_message = "This request must come from the site's own pages."


class NotFound(RequestError):
    """Nothing here, or nothing the caller may see (the two are indistinguishable)."""

    code = "NOT_FOUND"
    status = 404
    default_message = "Not found."


class MethodNotAllowed(RequestError):
    code = "METHOD_NOT_ALLOWED"
    status = 405
    default_message = "This method is not allowed here."


class PayloadTooLarge(RequestError):
    code = "PAYLOAD_TOO_LARGE"
    status = 413
    default_message = "The request body is too large."


class CaptchaFailed(RequestError):
    code = "CAPTCHA_FAILED"
    status = 403
    default_message = "The captcha check failed; please try again."


class Internal(RequestError):
    """Anything unexpected. The message is generic; the request id ties it to the log."""

    code = "INTERNAL"
    status = 500
    default_message = "Something went wrong on our side. Please try again later."


class Unavailable(RequestError):
    """A backing service (database, captcha verifier) did not answer in time, or ended the
    connection; the same request may simply be sent again (a submit with its same requestKey)."""

    code = "UNAVAILABLE"
    status = 503
    default_message = "The service is temporarily unavailable. Please try again later."
    retry_after_seconds: ClassVar[int] = 5

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}


# --- auth ------------------------------------------------------------------


class AuthError(SiteError):
    domain = "auth"


class Unauthenticated(AuthError):
    """No valid session, or wrong credentials (never says which part was wrong)."""

    code = "UNAUTHENTICATED"
    status = 401
    default_message = "Please sign in."


class EmailTaken(AuthError):
    code = "EMAIL_TAKEN"
    status = 409
    default_message = "An account with this email already exists."


class TokenInvalid(AuthError):
    """A mailed link's token that is unknown here (another site's, a mistyped one), already used,
    expired or meant for something else: one answer for all, so none can be told apart. 404, as for
    another site's or account's id: the link names nothing here (any more)."""

    code = "TOKEN_INVALID"
    status = 404
    default_message = "This link is invalid or has expired. Ask for a new one."


class EmailUnverified(AuthError):
    """The site asks new accounts to prove their address first, and this one has not yet: it may
    sign in and look around, not upload or start tasks (POST /api/auth/verify/resend mails a new link)."""

    code = "EMAIL_UNVERIFIED"
    status = 403
    default_message = ("Confirm your email address first: follow the link we mailed you "
                       "(the verify page sends a new one).")


# --- rate ------------------------------------------------------------------


class RateLimited(SiteError):
    """Too many requests from this account in the current minute, or sign-in attempts or
    registrations in the current window; ``retry_after_seconds`` is the wait until a retry counts."""

    domain = "rate"
    code = "RATE_LIMITED"
    status = 429
    default_message = "Too many requests. Please wait a minute and try again."

    def __init__(self, message: str | None = None, retry_after_seconds: int = 60) -> None:
        self.retry_after_seconds = retry_after_seconds
        super().__init__(message, retryAfterSeconds=retry_after_seconds)

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}
