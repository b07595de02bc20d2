"""Errors of the task and execution domains."""

from __future__ import annotations

from ..errors import SiteError
from .states import ErrorCode


class TaskError(SiteError):
    domain = "task"


class TaskNotFound(TaskError):
    """Missing or another account's — indistinguishable."""

    code = "NOT_FOUND"
    status = 404
    default_message = "Task not found."


class TaskRejected(TaskError):
    code = "VALIDATION_FAILED"
    status = 400
    default_message = "This task cannot be started."


class RequestConflict(TaskError):
    """The request key was already used for a different input or parameters."""

    code = "REQUEST_CONFLICT"
    status = 409
    default_message = "This request key was already used for a different task. Start a new request."


class ActiveLimit(TaskError):
    code = "ACTIVE_LIMIT"
    status = 409
    default_message = "You have too many active tasks. Wait for one to finish or cancel one."


class NotRetryable(TaskError):
    code = "NOT_RETRYABLE"
    status = 409
    default_message = "This task cannot be retried."


class TasksDisabled(TaskError):
    code = "DISABLED"
    status = 403
    default_message = "Starting tasks is disabled on this site."


class TasksNotConfigured(TaskError):
    code = "NOT_CONFIGURED"
    status = 503
    default_message = "Tasks are not configured on this site."


class ExecutionFailure(Exception):
    """A classified failure while executing: settles the task with ``code``."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.value)
        self.code = code


class LeaseLost(Exception):
    """The executor no longer holds the task's lease; it must stop without writing back."""
