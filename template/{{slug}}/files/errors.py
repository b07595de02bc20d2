"""Errors of the files domain."""

from __future__ import annotations

from typing import ClassVar

from ..errors import SiteError


class FileError(SiteError):
    domain = "file"


class FileNotFound(FileError):
    """Missing, expired, not ready, or another account's — all look the same."""

    code = "NOT_FOUND"
    status = 404
    default_message = "File not found."


class FileRejected(FileError):
    """The upload breaks a rule (empty, bad name, type not allowed)."""

    code = "VALIDATION_FAILED"
    status = 400
    default_message = "This file cannot be stored."


class FileTooLarge(FileError):
    code = "FILE_TOO_LARGE"
    status = 413
    default_message = "The file is larger than this site allows."

    @classmethod
    def over(cls, limit: int) -> FileTooLarge:
        return cls(f"Files may be at most {limit} bytes.")


class UploadsBusy(FileError):
    """This web process already receives ``[files] concurrent_uploads`` bodies, or this account
    already holds its share of them (files/slots.py)."""

    code = "BUSY"
    status = 503
    default_message = "Too many uploads are in progress. Please try again in a moment."

    def headers(self) -> dict[str, str]:
        return {"Retry-After": "1"}


class UploadTooSlow(FileError):
    """The body did not arrive in full within ``[files] receive_seconds``."""

    code = "UPLOAD_TIMEOUT"
    status = 408
    default_message = "The upload took too long to arrive. Please try again."


class QuotaExceeded(FileError):
    code = "QUOTA_EXCEEDED"
    status = 409
    default_message = "Not enough storage left. Delete some files and try again."


class FileContentLost(FileError):
    """The row says the file is there, but its object is gone from storage (deleted behind the
    site's back, or a storage failure lost it). The audit reports the same file as OBJECT_MISSING."""

    code = "CONTENT_LOST"
    status = 410
    default_message = "This file's contents are lost from storage. Delete it and upload it again."


class FileInUse(FileError):
    """An active task holds the file as its input."""

    code = "FILE_IN_USE"
    status = 409
    default_message = "This file is the input of an active task. Cancel or finish the task first."


class StorageUnavailable(FileError):
    """Object storage did not answer or refused; never carries the provider's words."""

    code = "STORAGE_UNAVAILABLE"
    status = 503
    default_message = "File storage is temporarily unavailable. Please try again."
    retry_after_seconds: ClassVar[int] = 5

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}


class FilesDisabled(FileError):
    code = "DISABLED"
    status = 403
    default_message = "File storage is disabled on this site."


class FilesNotConfigured(FileError):
    code = "NOT_CONFIGURED"
    status = 503
    default_message = "File storage is not configured on this site."
