"""The submit as one call: every check and write of a new task in one statement (migration 0018, task_submit).

The function takes the account lock, counts the request, and checks the request key, the active
limit, the input and the balance in the order ``store`` documents; a refusal it answers has
written nothing but the request's count, which stands (refused requests count too).
"""

from __future__ import annotations

import uuid
from uuid import UUID

import asyncpg
import msgspec

from ..charges import ledger
from ..charges.ledger import InsufficientCredits
from ..errors import RateLimited, SiteError, Unauthenticated
from ..files.errors import FileNotFound
from ..ratelimits.requests import WINDOW_SECONDS, counter_key
from ..settings import ChargesPolicy, FilesPolicy, TasksPolicy
from .bodies import SubmitBody, processor_of
from .contract import Processor
from .errors import ActiveLimit, RequestConflict, TaskRejected
from .sql import Q
from .states import DELIVERY_LEASE_SECONDS
from .store import Submitted, fingerprint, to_public

# The refusals task_submit answers after it counted the request (its count committed with it).
COUNTED_REFUSALS: tuple[type[SiteError], ...] = (
    RateLimited, RequestConflict, ActiveLimit, FileNotFound, TaskRejected, InsufficientCredits,
)


def _refusal(outcome: str, processor: Processor) -> SiteError:
    match outcome:
        case "no_account":
            return Unauthenticated()  # deleted while this request waited for it
        case "rate_limited":
            return RateLimited()
        case "conflict":
            return RequestConflict()
        case "active_limit":
            return ActiveLimit()
        case "file_missing":
            return FileNotFound("The input file is not available (deleted, expired or not yours).")
        case "file_type":
            return TaskRejected(f"{processor.title} takes files of type {', '.join(processor.accepts)}.")
        case "insufficient":
            return InsufficientCredits()
    raise ValueError(f"task_submit answered {outcome!r}")


async def submit(conn: asyncpg.Connection | asyncpg.Pool, policy: TasksPolicy, charges: ChargesPolicy,
                 files: FilesPolicy, owner_id: UUID, body: SubmitBody, write_limit: int | None = None) -> Submitted:
    """Create the task (queued, under a delivery lease) with its pin and hold, in one call; with
    ``write_limit``, the request is counted against it there too. A refusal raises its error
    (one of ``COUNTED_REFUSALS`` when the request was counted)."""
    processor = processor_of(body)
    name, version = processor.name, processor.version
    params = msgspec.to_builtins(body.params)
    task_id, token = uuid.uuid4(), uuid.uuid4()
    row = await conn.fetchrow(
        Q.submit_task, owner_id, counter_key(owner_id, "write") if write_limit is not None else None,
        WINDOW_SECONDS, write_limit, body.request_key, fingerprint(name, version, body.file_id, params),
        policy.max_active, body.file_id, list(processor.accepts), task_id, name, version, params,
        policy.max_attempts, ledger.quote(charges, name, version), token, DELIVERY_LEASE_SECONDS,
        processor.max_output.times_input, processor.max_output.plus_bytes, files.max_file_bytes,
        processor.result_type,
    )
    outcome = row["outcome"]
    if outcome == "known":
        return Submitted(task_id=row["id"])  # the same request again: never run twice
    if outcome != "created":
        raise _refusal(outcome, processor)
    # task_view's own columns, as they are for a task without a result
    task = to_public({**row, "result_name": None, "result_size": None, "result_sha256": None, "result_gone": False,
                      "result_content_type": None})
    return Submitted(task_id=task_id, token=token, task=task)
