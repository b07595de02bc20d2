"""The operator console's pages (``/ops``): rendered on the server from the same reads as
``/api/ops``; their one script only runs the confirmed actions and the audit through that API.

Behind the console's guards (``OPERATOR_GUARDS``, like ``/api/ops``): anyone but an operator
gets the 404 of a path that does not exist (the JSON envelope every missing path answers), never
a redirect to sign in that would say the console is here; an operator's views are counted
against the account's read limit like any request.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode
from uuid import UUID

from litestar import Router, get
from litestar.params import FromPath, QueryParameter
from litestar.response import Template
from litestar.status_codes import HTTP_404_NOT_FOUND

from ..ops import actions
from ..tasks import console
from ..tasks.console import FinishedMinute, TaskFilter
from ..tasks.errors import TaskNotFound
from ..tasks.states import ACTIVE, ErrorCode, TaskStatus
from .dependencies import CurrentAccount, DbPool, SiteSettings
from .guards import OPERATOR_GUARDS
from .pages import page
from .paging import Cursor, read_page

FormText = Annotated[str | None, QueryParameter(max_length=254)]

# The chart's drawing box (viewBox units); the stylesheet scales it to the page's width.
CHART_WIDTH, CHART_HEIGHT, CHART_TOP = 600, 160, 8
OUTCOMES = ("succeeded", "failed", "canceled")
STATUSES = [status.value for status in TaskStatus]
ERROR_CODES = [code.value for code in ErrorCode]


def chart_bars(minutes: list[FinishedMinute]) -> dict[str, Any]:
    """One stacked bar per minute (succeeded at the bottom, then failed, then canceled), scaled to the
    busiest minute; drawn as plain SVG rects (no inline style: the CSP allows none)."""
    peak = max((m.succeeded + m.failed + m.canceled for m in minutes), default=0)
    slot = CHART_WIDTH / max(len(minutes), 1)
    usable = CHART_HEIGHT - CHART_TOP
    bars = []
    for index, minute in enumerate(minutes):
        base = CHART_HEIGHT
        for outcome in OUTCOMES:
            count = getattr(minute, outcome)
            if not count:
                continue
            height = usable * count / peak
            base -= height
            bars.append({"x": round(index * slot + 1, 2), "y": round(base, 2), "width": round(slot - 2, 2),
                         "height": round(height, 2), "outcome": outcome,
                         "label": f"{minute.minute:%H:%M} UTC: {count} {outcome}"})
    return {"width": CHART_WIDTH, "height": CHART_HEIGHT, "bars": bars, "peak": peak,
            "totals": {o: sum(getattr(m, o) for m in minutes) for o in OUTCOMES},
            "first": minutes[0].minute if minutes else None, "last": minutes[-1].minute if minutes else None}


def _form_time(raw: str | None, problems: list[str], label: str) -> datetime | None:
    if not raw:
        return None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        problems.append(f"{label} is not a date and time; it was ignored.")
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def form_filter(status: str | None, error_code: str | None, email: str | None, since: str | None,
                until: str | None) -> tuple[TaskFilter, list[str]]:
    """The filter form's fields (empty ones mean "any"; a value that is not one is said and ignored)."""
    problems: list[str] = []
    known_status = status if status in STATUSES else None
    if status and known_status is None:
        problems.append("Unknown state; it was ignored.")
    known_code = error_code if error_code in ERROR_CODES else None
    if error_code and known_code is None:
        problems.append("Unknown error code; it was ignored.")
    where = TaskFilter(status=TaskStatus(known_status) if known_status else None, error_code=known_code,
                       owner_email=(email or "").strip() or None, since=_form_time(since, problems, "From"),
                       until=_form_time(until, problems, "To"))
    return where, problems


@get("/ops")
async def ops_overview(account: CurrentAccount, pool: DbPool, settings: SiteSettings) -> Template:
    async with pool.acquire() as conn:
        overview = await console.overview(conn)
        recent = await actions.recent(conn, None, None, 10)
    return page("ops.html", settings, title="Operations", viewer=account, current="ops", ops_page="overview",
                overview=overview, chart=chart_bars(overview.finished_per_minute), actions=recent)


@get("/ops/tasks")
async def ops_tasks(account: CurrentAccount, pool: DbPool, settings: SiteSettings, cursor: Cursor = None,
                    status: FormText = None, error_code: Annotated[str | None, QueryParameter(
                        name="errorCode", max_length=40)] = None, email: FormText = None,
                    since: Annotated[str | None, QueryParameter(name="from", max_length=40)] = None,
                    until: Annotated[str | None, QueryParameter(name="to", max_length=40)] = None) -> Template:
    where, problems = form_filter(status, error_code, email, since, until)
    listing = await read_page(pool, cursor, lambda conn, after, limit: console.list_tasks(conn, where, after, limit),
                              key=lambda task: (task.created_at, task.id))
    fields = {"status": status or "", "errorCode": error_code or "", "email": email or "", "from": since or "",
              "to": until or ""}
    next_href = None
    if listing.next_cursor:
        next_href = "/ops/tasks?" + urlencode({**{k: v for k, v in fields.items() if v}, "cursor": listing.next_cursor})
    return page("ops_tasks.html", settings, title="Operations: tasks", viewer=account, current="ops",
                tasks=listing.items, next_href=next_href, fields=fields, problems=problems, paged=bool(cursor),
                statuses=STATUSES, error_codes=ERROR_CODES, ops_page="tasks")


@get("/ops/tasks/{task_id:uuid}")
async def ops_task(task_id: FromPath[UUID], account: CurrentAccount, pool: DbPool, settings: SiteSettings) -> Template:
    try:
        async with pool.acquire() as conn:
            detail = await console.task_detail(conn, task_id)
            log = await actions.recent(conn, task_id, None, 50)
    except TaskNotFound:
        return page("not_found.html", settings, title="Task not found", viewer=account, current="ops",
                    status_code=HTTP_404_NOT_FOUND)
    task = detail.task
    return page("ops_task.html", settings, title="Operations: task", viewer=account, current="ops", ops_page="tasks",
                detail=detail, task=task, actions=log, can_cancel=task.status in ACTIVE and not task.cancel_requested)


ops_router = Router(
    path="/",
    route_handlers=[ops_overview, ops_tasks, ops_task],
    # Counted like the console's API: each view reads every account's tasks.
    guards=OPERATOR_GUARDS,
    include_in_schema=False,
)
