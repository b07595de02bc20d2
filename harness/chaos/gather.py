"""The evidence after a campaign: each task's row and attempts, its result as its owner downloads it,
and its request key sent again — over the site's own database and HTTP API."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from uuid import UUID

import asyncpg
import httpx

from harness.state import SiteRecord

from .checks import Outcome, TaskRow
from .load import GATEWAY_ERRORS, Account, Submitted, retry_after, submit_body

ROWS = """
SELECT t.id::text, t.request_key::text, t.status, t.error_code, t.attempt_count, t.max_attempts,
       (SELECT count(*) FROM task_attempt a WHERE a.task_id = t.id) AS attempt_rows,
       (SELECT count(*) FROM task_attempt a WHERE a.task_id = t.id AND a.outcome = 'succeeded') AS succeeded_attempts,
       extract(epoch FROM t.created_at)::float8 AS created_at, extract(epoch FROM t.finished_at)::float8 AS finished_at
FROM task t
WHERE t.owner_id = ANY($1)
"""
CONCURRENCY = 4  # requests in flight per account
ATTEMPTS = 20  # tries of one request through 429s and dropped connections


async def task_rows(site: SiteRecord, owners: list[UUID]) -> list[TaskRow]:
    conn = await asyncpg.connect(site.database_url)
    try:
        return [TaskRow(**dict(row)) for row in await conn.fetch(ROWS, owners)]
    finally:
        await conn.close()


async def _answer(call: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
    """The response, once it is not a 429 (backed off) and a connection was not dropped."""
    for _ in range(ATTEMPTS - 1):
        try:
            response = await call()
        except httpx.TransportError:
            await asyncio.sleep(0.5)
            continue
        if response.status_code in GATEWAY_ERRORS:  # behind a proxy: the site's connection was dropped
            await asyncio.sleep(0.5)
            continue
        if response.status_code != 429:
            return response
        await asyncio.sleep(retry_after(response))
    return await call()


async def _result(account: Account, outcome: Outcome) -> None:
    detail = await _answer(lambda: account.http.get(f"/api/tasks/{outcome.task_id}"))
    if detail.status_code != 200:
        outcome.result_problem = f"detail answered {detail.status_code}"
        return
    result = detail.json()["result"]
    if result is None:
        outcome.result_problem = f"the task is {detail.json()['status']} and shows no result"
        return
    content = await _answer(lambda: account.http.get(f"/api/files/{result['fileId']}/content"))
    if content.status_code != 200:
        outcome.result_problem = f"content answered {content.status_code}"
        return
    outcome.result = content.content


async def _resubmit(account: Account, request: Submitted, outcome: Outcome) -> None:
    response = await _answer(lambda: account.http.post("/api/tasks", json=submit_body(request)))
    outcome.resubmit_status = response.status_code
    if response.status_code in (200, 201):
        outcome.resubmit_task_id = response.json()["id"]


async def _account_outcomes(account: Account, rows: dict[str, TaskRow]) -> list[Outcome]:
    limit = asyncio.Semaphore(CONCURRENCY)
    outcomes: list[Outcome] = []

    async def one(request: Submitted) -> None:
        outcome = Outcome(request_key=request.request_key, task_id=request.task_id or "", expected=request.expected,
                          row=rows.get(request.request_key))
        outcomes.append(outcome)
        async with limit:
            if outcome.row is not None and outcome.row.status == "succeeded":
                await _result(account, outcome)
            await _resubmit(account, request, outcome)

    await asyncio.gather(*(one(request) for request in account.submitted if request.task_id is not None))
    return outcomes


async def outcomes(site: SiteRecord, accounts: list[Account]) -> tuple[list[Outcome], list[TaskRow]]:
    """One outcome per answered submit, and every task row of the accounts."""
    rows = await task_rows(site, [UUID(account.id) for account in accounts])
    by_key = {row.request_key: row for row in rows}
    per_account = await asyncio.gather(*(_account_outcomes(account, by_key) for account in accounts))
    return [outcome for found in per_account for outcome in found], rows
