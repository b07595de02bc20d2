"""HTTP routes for tasks."""

from __future__ import annotations

from uuid import UUID

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from .. import captcha
from ..db.pool import transaction
from ..runtime import Runtime
from ..web.dependencies import CurrentAccount, SiteRuntime, client_address
from ..web.paging import PAGE_SIZE, Cursor, decode_cursor, next_cursor
from . import delivery, store
from .errors import TasksDisabled, TasksNotConfigured
from .store import RetryBody, SubmitBody, TaskOut


class TaskPage(msgspec.Struct, rename="camel", frozen=True):
    items: list[TaskOut]
    next_cursor: str | None


def require_execution(runtime: Runtime) -> None:
    """New work needs the feature on, and storage and a broker to run it; nothing is created otherwise."""
    if not runtime.settings.policy.tasks.enabled:
        raise TasksDisabled()
    if runtime.storage is None or runtime.broker is None:
        raise TasksNotConfigured()


class TasksController(Controller):
    path = "/api/tasks"
    tags = ["tasks"]

    @post("/", status_code=HTTP_201_CREATED)
    async def submit_task(self, request: Request, data: JSONBody[SubmitBody], account: CurrentAccount,
                          runtime: SiteRuntime) -> Response[TaskOut]:
        """Start a task; 201 when new, 200 with the existing task when the request key was seen with this input."""
        require_execution(runtime)
        if captcha.required(runtime.settings, "task_submit"):
            async with runtime.pool.acquire() as conn:
                known = await store.request_key_known(conn, account.id, data.request_key)
            if not known:
                await captcha.verify(runtime.settings, "task_submit", data.captcha_token, client_address(request))
        async with transaction(runtime.pool) as conn:
            task_id, created = await store.submit(conn, runtime.settings, account.id, data)
        if created:
            await delivery.dispatch(runtime, task_id)
        async with runtime.pool.acquire() as conn:
            task = await store.get_task(conn, account.id, task_id)
        return Response(task, status_code=HTTP_201_CREATED if created else HTTP_200_OK)

    @get("/")
    async def list_tasks(self, account: CurrentAccount, runtime: SiteRuntime,
                         cursor: Cursor = None) -> TaskPage:
        """The signed-in account's tasks, newest first, 20 a page (keyset on createdAt and id)."""
        after = decode_cursor(cursor)
        async with runtime.pool.acquire() as conn:
            rows = await store.list_tasks(conn, account.id, after, PAGE_SIZE + 1)
        return TaskPage(items=rows[:PAGE_SIZE], next_cursor=next_cursor(rows, lambda t: (t.created_at, t.id)))

    @get("/{task_id:uuid}")
    async def get_task(self, task_id: FromPath[UUID], account: CurrentAccount, runtime: SiteRuntime) -> TaskOut:
        async with runtime.pool.acquire() as conn:
            return await store.get_task(conn, account.id, task_id)

    @post("/{task_id:uuid}/cancel", status_code=HTTP_200_OK)
    async def cancel_task(self, task_id: FromPath[UUID], account: CurrentAccount, runtime: SiteRuntime) -> TaskOut:
        """Waiting: canceled now. Running: cancel requested, settled by the executor. Finished: unchanged."""
        async with transaction(runtime.pool) as conn:
            await store.cancel(conn, account.id, task_id)
            return await store.get_task(conn, account.id, task_id)

    @post("/{task_id:uuid}/retry", status_code=HTTP_200_OK)
    async def retry_task(self, request: Request, task_id: FromPath[UUID], account: CurrentAccount,
                         runtime: SiteRuntime, data: JSONBody[RetryBody | None] = None) -> TaskOut:
        """Run a failed task again, if its failure allows it and attempts remain (the budget is not reset)."""
        require_execution(runtime)
        await captcha.verify(runtime.settings, "task_retry", data.captcha_token if data else None,
                             client_address(request))
        async with transaction(runtime.pool) as conn:
            await store.retry(conn, runtime.settings, account.id, task_id)
        await delivery.dispatch(runtime, task_id)
        async with runtime.pool.acquire() as conn:
            return await store.get_task(conn, account.id, task_id)
