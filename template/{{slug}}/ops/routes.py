"""``/api/ops``: the operator console's JSON routes. Only an operator (checked in SQL on every
request) reaches them; anyone else gets the 404 of a path that does not exist."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

import asyncpg
from litestar import Controller, get, post
from litestar.params import FromPath, QueryParameter
from litestar.status_codes import HTTP_200_OK

from ..audit import AuditReport, run_audit
from ..auth.accounts import TEXT_PATTERN
from ..charges.ledger import InsufficientCredits
from ..db.pool import transaction
from ..errors import NotFound, RateLimited, Unavailable
from ..tasks import console, delivery
from ..tasks.console import ConsoleTask, ConsoleTaskDetail, Overview, TaskFilter
from ..tasks.errors import ActiveLimit, NotRetryable, TaskNotFound
from ..tasks.routes import EXECUTION, execution_available
from ..tasks.states import TaskStatus
from ..web.dependencies import CurrentAccount, DbPool, Queue, SiteSettings
from ..web.guards import OPERATOR_GUARDS, rfc3339_query
from ..web.openapi import MUTATION, PARAMETERS, answers
from ..web.paging import Cursor, Page, read_page
from . import actions, audits
from .actions import OpsAction

StatusFilter = Annotated[TaskStatus | None, QueryParameter(name="status")]
ErrorCodeFilter = Annotated[str | None, QueryParameter(name="errorCode", max_length=40)]
EmailFilter = Annotated[str | None, QueryParameter(name="email", max_length=254, pattern=TEXT_PATTERN)]
SinceFilter = Annotated[datetime | None, QueryParameter(name="from")]
UntilFilter = Annotated[datetime | None, QueryParameter(name="to")]
TaskIdFilter = Annotated[UUID | None, QueryParameter(name="taskId")]
# What the operator guards answer: the 404 of a path that does not exist, the per-minute quota spent.
OPERATOR = (NotFound, RateLimited)


class OpsController(Controller):
    path = "/api/ops"
    tags = ["ops"]
    guards = OPERATOR_GUARDS

    @get("/overview", responses=answers(*OPERATOR))
    async def overview(self, pool: DbPool) -> Overview:
        """Tasks by state now, finished per minute over the last hour, dead letters in the last 24 h."""
        async with pool.acquire() as conn:
            return await console.overview(conn)

    @get("/tasks", guards=[rfc3339_query("from", "to")], responses=answers(*OPERATOR, *PARAMETERS))
    async def list_tasks(self, pool: DbPool, cursor: Cursor = None, status: StatusFilter = None,
                         error_code: ErrorCodeFilter = None, email: EmailFilter = None, since: SinceFilter = None,
                         until: UntilFilter = None) -> Page[ConsoleTask]:
        """Every account's tasks, newest first, 20 a page; filters by state, error code, owner email and
        creation time in [from, to). The cursor continues the same filters."""
        where = TaskFilter(status=status, error_code=error_code, owner_email=email, since=since, until=until)
        return await read_page(pool, cursor,
                               lambda conn, after, limit: console.list_tasks(conn, where, after, limit),
                               key=lambda task: (task.created_at, task.id))

    @get("/tasks/{task_id:uuid}", responses=answers(*OPERATOR, *PARAMETERS, TaskNotFound))
    async def get_task(self, task_id: FromPath[UUID], pool: DbPool) -> ConsoleTaskDetail:
        """The owner's view of the task, its owner, attempts, dead-letter receipts and charge entries."""
        async with pool.acquire() as conn:
            return await console.task_detail(conn, task_id)

    @post("/tasks/{task_id:uuid}/retry", status_code=HTTP_200_OK, guards=[execution_available],
          responses=answers(*OPERATOR, *MUTATION, *PARAMETERS, *EXECUTION, TaskNotFound, NotRetryable, ActiveLimit,
                            InsufficientCredits))
    async def retry_task(self, task_id: FromPath[UUID], account: CurrentAccount, pool: DbPool, queue: Queue,
                         settings: SiteSettings) -> ConsoleTaskDetail:
        """The owner's retry, by its rules and budget (never reset); logged."""
        async with transaction(pool) as conn:
            await actions.retry(conn, settings.policy.tasks, account, task_id)
        await delivery.dispatch(pool, queue, task_id)
        try:  # the retry stands whatever the database answers now: a 503 a reload resolves, never a 500
            async with pool.acquire() as conn:
                return await console.task_detail(conn, task_id)
        except asyncpg.PostgresError:
            raise Unavailable() from None

    @post("/tasks/{task_id:uuid}/cancel", status_code=HTTP_200_OK,
          responses=answers(*OPERATOR, *MUTATION, *PARAMETERS, TaskNotFound))
    async def cancel_task(self, task_id: FromPath[UUID], account: CurrentAccount, pool: DbPool) -> ConsoleTaskDetail:
        """The owner's cancel: waiting tasks end now, running ones are asked to stop; logged."""
        async with transaction(pool) as conn:
            await actions.cancel(conn, account, task_id)
            return await console.task_detail(conn, task_id)

    @get("/actions", responses=answers(*OPERATOR, *PARAMETERS))
    async def list_actions(self, pool: DbPool, cursor: Cursor = None,
                           task_id: TaskIdFilter = None) -> Page[OpsAction]:
        """The operators' log, newest first, 20 a page: every action, or one task's."""
        return await read_page(pool, cursor,
                               lambda conn, after, limit: actions.recent(conn, task_id, after, limit),
                               key=lambda action: (action.created_at, action.id))

    @post("/audit", status_code=HTTP_200_OK, responses=answers(*OPERATOR, *MUTATION))
    async def audit(self, account: CurrentAccount, pool: DbPool, settings: SiteSettings) -> AuditReport:
        """Run the books' audit now (read-only, as ``python -m <site> audit``); the run is logged.
        One at a time per site: 409 ``AUDIT_RUNNING`` (with its ``startedAt``) while another runs."""
        async with audits.one_at_a_time(pool):
            report = await run_audit(settings)
        outcome = "clean" if report.clean else f"{len(report.findings)} finding(s)"
        async with transaction(pool) as conn:
            await actions.record(conn, account, "audit", None, outcome)
        return report
