"""``/api/ops``: the operator console's JSON routes. Only an operator (checked in SQL on every
request) reaches them; anyone else gets the 404 of a path that does not exist."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from litestar import Controller, get, post
from litestar.params import FromPath, QueryParameter
from litestar.status_codes import HTTP_200_OK

from ..audit import AuditReport, run_audit
from ..db.pool import transaction
from ..tasks import console, delivery
from ..tasks.console import ConsoleTask, ConsoleTaskDetail, Overview, TaskFilter
from ..tasks.routes import execution_available
from ..tasks.states import TaskStatus
from ..web.dependencies import CurrentAccount, DbPool, Queue, SiteSettings
from ..web.guards import OPERATOR_GUARDS
from ..web.paging import Cursor, Page, read_page
from . import actions
from .actions import OpsAction

StatusFilter = Annotated[TaskStatus | None, QueryParameter(name="status")]
ErrorCodeFilter = Annotated[str | None, QueryParameter(name="errorCode", max_length=40)]
EmailFilter = Annotated[str | None, QueryParameter(name="email", max_length=254)]
SinceFilter = Annotated[datetime | None, QueryParameter(name="from")]
UntilFilter = Annotated[datetime | None, QueryParameter(name="to")]
TaskIdFilter = Annotated[UUID | None, QueryParameter(name="taskId")]


class OpsController(Controller):
    path = "/api/ops"
    tags = ["ops"]
    guards = OPERATOR_GUARDS
    # The console hides itself behind a 404: the public document does not list it either.
    include_in_schema = False

    @get("/overview")
    async def overview(self, pool: DbPool) -> Overview:
        """Tasks by state now, finished per minute over the last hour, dead letters in the last 24 h."""
        async with pool.acquire() as conn:
            return await console.overview(conn)

    @get("/tasks")
    async def list_tasks(self, pool: DbPool, cursor: Cursor = None, status: StatusFilter = None,
                         error_code: ErrorCodeFilter = None, email: EmailFilter = None, since: SinceFilter = None,
                         until: UntilFilter = None) -> Page[ConsoleTask]:
        """Every account's tasks, newest first, 20 a page; filters by state, error code, owner email and
        creation time in [from, to). The cursor continues the same filters."""
        where = TaskFilter(status=status, error_code=error_code, owner_email=email, since=since, until=until)
        return await read_page(pool, cursor,
                               lambda conn, after, limit: console.list_tasks(conn, where, after, limit),
                               key=lambda task: (task.created_at, task.id))

    @get("/tasks/{task_id:uuid}")
    async def get_task(self, task_id: FromPath[UUID], pool: DbPool) -> ConsoleTaskDetail:
        """The owner's view of the task, its owner, attempts, dead-letter receipts and charge entries."""
        async with pool.acquire() as conn:
            return await console.task_detail(conn, task_id)

    @post("/tasks/{task_id:uuid}/retry", status_code=HTTP_200_OK, guards=[execution_available])
    async def retry_task(self, task_id: FromPath[UUID], account: CurrentAccount, pool: DbPool, queue: Queue,
                         settings: SiteSettings) -> ConsoleTaskDetail:
        """The owner's retry, by its rules and budget (never reset); logged."""
        async with transaction(pool) as conn:
            await actions.retry(conn, settings.policy.tasks, account, task_id)
        await delivery.dispatch(pool, queue, task_id)
        async with pool.acquire() as conn:
            return await console.task_detail(conn, task_id)

    @post("/tasks/{task_id:uuid}/cancel", status_code=HTTP_200_OK)
    async def cancel_task(self, task_id: FromPath[UUID], account: CurrentAccount, pool: DbPool) -> ConsoleTaskDetail:
        """The owner's cancel: waiting tasks end now, running ones are asked to stop; logged."""
        async with transaction(pool) as conn:
            await actions.cancel(conn, account, task_id)
            return await console.task_detail(conn, task_id)

    @get("/actions")
    async def list_actions(self, pool: DbPool, cursor: Cursor = None,
                           task_id: TaskIdFilter = None) -> Page[OpsAction]:
        """The operators' log, newest first, 20 a page: every action, or one task's."""
        return await read_page(pool, cursor,
                               lambda conn, after, limit: actions.recent(conn, task_id, after, limit),
                               key=lambda action: (action.created_at, action.id))

    @post("/audit", status_code=HTTP_200_OK)
    async def audit(self, account: CurrentAccount, pool: DbPool, settings: SiteSettings) -> AuditReport:
        """Run the books' audit now (read-only, as ``python -m <site> audit``); the run is logged."""
        report = await run_audit(settings)
        outcome = "clean" if report.clean else f"{len(report.findings)} finding(s)"
        async with transaction(pool) as conn:
            await actions.record(conn, account, "audit", None, outcome)
        return report
