"""HTTP routes for tasks."""

from __future__ import annotations

import logging
from uuid import UUID

import asyncpg
from litestar import Controller, Request, Response, get, post
from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from .. import captcha
from ..charges.ledger import InsufficientCredits
from ..db.pool import transaction
from ..errors import CaptchaFailed, EmailUnverified, Unavailable
from ..files.errors import FileNotFound
from ..ratelimits.requests import count_request
from ..web.dependencies import CurrentAccount, DbPool, Queue, SiteSettings, client_address, runtime_of
from ..web.guards import ACCOUNT_GUARDS, COUNTS_ITS_OWN_REQUESTS, email_verified, requests_counted
from ..web.openapi import JSON_BODY, MUTATION, PARAMETERS, SIGNED_IN, answers
from ..web.paging import Cursor, Page, read_page
from . import catalog, delivery, store, submission
from .bodies import RetryBody, SubmitBody
from .errors import (
    ActiveLimit,
    NotRetryable,
    RequestConflict,
    TaskNotFound,
    TaskRejected,
    TasksDisabled,
    TasksNotConfigured,
)
from .store import TaskOut

log = logging.getLogger(__name__)


async def execution_available(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """New work needs the feature on, and storage and a broker to run it; nothing is created otherwise."""
    runtime = runtime_of(connection)
    if not runtime.settings.policy.tasks.enabled:
        raise TasksDisabled()
    if runtime.objects is None or runtime.queue is None:
        raise TasksNotConfigured()


async def read_back(pool: asyncpg.Pool, owner_id: UUID, task_id: UUID) -> TaskOut:
    """The task as it stands after the request's commit. The task is there whatever the database
    answers now: an error is a 503 that a resend with the same key (or a reload) resolves, never a 500."""
    try:
        async with pool.acquire() as conn:
            return await store.get_task(conn, owner_id, task_id)
    except asyncpg.PostgresError as error:
        log.warning("task %s: read after the commit failed (%s)", task_id, type(error).__name__)
        raise Unavailable() from None


# What the email_verified and execution_available guards answer.
EXECUTION = (EmailUnverified, TasksDisabled, TasksNotConfigured)


@get("/api/processors", tags=["tasks"], guards=ACCOUNT_GUARDS, responses=answers(*SIGNED_IN))
async def list_processors(settings: SiteSettings) -> list[catalog.ProcessorOut]:
    """The processors new tasks can use: each one's params schema, accepted input types and price."""
    return catalog.enabled(settings.policy.charges)


class TasksController(Controller):
    path = "/api/tasks"
    tags = ["tasks"]
    guards = ACCOUNT_GUARDS

    @post("/", status_code=HTTP_201_CREATED, guards=[email_verified, execution_available],
          opt={COUNTS_ITS_OWN_REQUESTS: True},
          responses={200: ResponseSpec(TaskOut, description="The task this requestKey already started (nothing new)."),
                     **answers(*SIGNED_IN, *MUTATION, *JSON_BODY, *EXECUTION, CaptchaFailed, FileNotFound,
                               TaskRejected, RequestConflict, ActiveLimit, InsufficientCredits)})
    async def submit_task(self, request: Request, data: JSONBody[SubmitBody], account: CurrentAccount,
                          pool: DbPool, queue: Queue, settings: SiteSettings) -> Response[TaskOut]:
        """Start a task; 201 when new, 200 with the existing task when the request key was seen with this input."""
        # The request is counted against the write limit inside the submit's own call: one commit
        # for both (docs/tasks.md). A request that fails before that commits is counted on
        # its own afterwards (guards.count_uncounted_request). The captcha's call to its provider
        # runs outside any transaction, so with a captcha the count comes first, on its own.
        limit = settings.policy.tasks.writes_per_minute
        count_in_submit = True
        if captcha.required(settings, "task_submit"):
            await count_request(pool, account.id, "write", limit)
            requests_counted(request)
            count_in_submit = False
            async with pool.acquire() as conn:
                known = await store.request_key_known(conn, account.id, data.request_key)
            if not known:
                await captcha.verify(settings, "task_submit", data.captcha_token, client_address(request))
        try:
            submitted = await submission.submit(pool, settings.policy.tasks, settings.policy.charges,
                                                settings.policy.files, account.id, data,
                                                write_limit=limit if count_in_submit else None)
        except submission.COUNTED_REFUSALS:
            requests_counted(request)  # counted in the submit's own call, which committed
            raise
        requests_counted(request)
        task = submitted.task
        if submitted.token is not None and not await delivery.send_submitted(pool, queue, submitted.task_id,
                                                                             submitted.token):
            task = None  # it may have gone back to pending
        if task is None:
            task = await read_back(pool, account.id, submitted.task_id)
        return Response(task, status_code=HTTP_201_CREATED if submitted.created else HTTP_200_OK)

    @get("/", responses=answers(*SIGNED_IN, *PARAMETERS))
    async def list_tasks(self, account: CurrentAccount, pool: DbPool, cursor: Cursor = None) -> Page[TaskOut]:
        """The signed-in account's tasks, newest first, 20 a page (keyset on createdAt and id)."""
        return await read_page(pool, cursor,
                               lambda conn, after, limit: store.list_tasks(conn, account.id, after, limit),
                               key=lambda task: (task.created_at, task.id))

    @get("/{task_id:uuid}", responses=answers(*SIGNED_IN, *PARAMETERS, TaskNotFound))
    async def get_task(self, task_id: FromPath[UUID], account: CurrentAccount, pool: DbPool) -> TaskOut:
        async with pool.acquire() as conn:
            return await store.get_task(conn, account.id, task_id)

    @post("/{task_id:uuid}/cancel", status_code=HTTP_200_OK,
          responses=answers(*SIGNED_IN, *MUTATION, *PARAMETERS, TaskNotFound))
    async def cancel_task(self, task_id: FromPath[UUID], account: CurrentAccount, pool: DbPool) -> TaskOut:
        """Waiting: canceled now. Running: cancel requested, settled by the executor. Finished: unchanged."""
        async with transaction(pool) as conn:
            await store.cancel(conn, account.id, task_id)
            return await store.get_task(conn, account.id, task_id)

    @post("/{task_id:uuid}/retry", status_code=HTTP_200_OK, guards=[email_verified, execution_available],
          responses=answers(*SIGNED_IN, *MUTATION, *JSON_BODY, *EXECUTION, CaptchaFailed, TaskNotFound,
                            NotRetryable, ActiveLimit, InsufficientCredits))
    async def retry_task(self, request: Request, task_id: FromPath[UUID], account: CurrentAccount, pool: DbPool,
                         queue: Queue, settings: SiteSettings, data: JSONBody[RetryBody | None] = None) -> TaskOut:
        """Run a failed task again, if its failure allows it and attempts remain (the budget is not reset)."""
        await captcha.verify(settings, "task_retry", data.captcha_token if data else None, client_address(request))
        async with transaction(pool) as conn:
            await store.retry(conn, settings.policy.tasks, account.id, task_id)
        await delivery.dispatch(pool, queue, task_id)
        return await read_back(pool, account.id, task_id)
