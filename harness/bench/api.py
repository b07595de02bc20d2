"""API submit throughput: ``concurrency`` clients send new submits back to back; then the invariants.

The site's workers are stopped for this phase, so the web process alone is
measured and no task leaves the active states — which is what lets the
checks afterwards be exact: every 201 is one row and nothing else is, a
resent request key finds its task instead of making another, and a burst at
one account creates exactly ``max_active`` tasks however many arrive at once.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from uuid import UUID

import asyncpg

from harness.state import SiteRecord

from .accounts import Account, open_account, site_policy
from .measure import latency, rate
from .results import SUBMITS_PER_ACCOUNT, ApiSubmit

RESEND_EVERY = 10


def accounts_needed(requests: int, clients: int) -> int:
    """Enough accounts that none gets more than SUBMITS_PER_ACCOUNT (below the bench's active limit)."""
    return max(clients, -(-requests // SUBMITS_PER_ACCOUNT))


async def open_api_accounts(site: SiteRecord, *, requests: int, clients: int,
                            first_index: int) -> tuple[list[Account], Account]:
    """The phase's accounts and the one its burst goes to. Opened while the site's workers run: a
    site that asks for proven addresses mails the link from its worker, which this phase stops."""
    count = accounts_needed(requests, clients)
    accounts = list(await asyncio.gather(*(open_account(site, first_index + i) for i in range(count))))
    try:
        return accounts, await open_account(site, first_index + count)
    except BaseException:
        for account in accounts:
            await account.close()
        raise


async def api_submit(site: SiteRecord, accounts: list[Account], limit_account: Account, *, requests: int,
                     clients: int) -> ApiSubmit:
    """Measure with the accounts ``open_api_accounts`` gave, and close them."""
    try:
        for account in [*accounts, limit_account]:  # idle while the workers stopped: connect anew
            await account.reconnect()
        return await _measure(site, accounts, limit_account, requests, clients)
    finally:
        for account in [*accounts, limit_account]:
            await account.close()


async def _measure(site: SiteRecord, accounts: list[Account], limit_account: Account, requests: int,
                   clients: int) -> ApiSubmit:
    problems: list[str] = []
    timings: list[float] = []
    created: dict[str, tuple[Account, str]] = {}  # request key -> (account, task id)

    async def client(index: int) -> None:
        for number in range(index, requests, clients):
            account = accounts[number % len(accounts)]
            key = str(uuid.uuid4())
            began = time.perf_counter()
            response = await account.submit(key)
            timings.append(time.perf_counter() - began)
            if response.status_code == 201:
                created[key] = (account, response.json()["id"])
            else:
                problems.append(f"submit answered {response.status_code}: {response.text[:120]}")

    began = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    seconds = time.perf_counter() - began

    # Idempotency: a resent key answers 200 with the task it made, and makes nothing.
    resend = list(created.items())[::RESEND_EVERY]
    answers = await asyncio.gather(*(account.submit(key) for key, (account, _) in resend))
    same = sum(1 for (_, (_, task_id)), a in zip(resend, answers, strict=True)
               if a.status_code == 200 and a.json()["id"] == task_id)
    if same != len(resend):
        problems.append(f"{len(resend) - same} of {len(resend)} resent request keys did not find their task")

    # The active limit under a burst larger than it.
    max_active = int(site_policy(site)["tasks"]["max_active"])
    burst = await asyncio.gather(*(limit_account.submit() for _ in range(2 * max_active)))
    limit_created = sum(1 for r in burst if r.status_code == 201)
    refused = sum(1 for r in burst if r.status_code == 409 and r.json()["error"]["code"] == "ACTIVE_LIMIT")
    if limit_created != max_active or refused != max_active:
        problems.append(f"a burst of {2 * max_active} made {limit_created} tasks and {refused} ACTIVE_LIMIT refusals")

    rows, active = await _count_rows(site, [UUID(a.id) for a in accounts], UUID(limit_account.id))
    if rows != len(created):
        problems.append(f"{rows} task rows for {len(created)} created submits")
    if active != max_active:
        problems.append(f"{active} active tasks at an account limited to {max_active}")
    return ApiSubmit(
        site=site.slug, clients=clients, accounts=len(accounts), requests=requests, seconds=round(seconds, 3),
        requests_per_s=rate(requests, seconds), latency=latency(timings), created=len(created), rows=rows,
        resent=len(resend), resent_same=same, max_active=max_active, limit_burst=2 * max_active,
        limit_created=limit_created, limit_refused=refused, limit_active_rows=active, problems=problems[:10],
    )


async def _count_rows(site: SiteRecord, owners: list[UUID], limited: UUID) -> tuple[int, int]:
    conn = await asyncpg.connect(site.database_url)
    try:
        rows = await conn.fetchval("SELECT count(*) FROM task WHERE owner_id = ANY($1::uuid[])", owners)
        active = await conn.fetchval("SELECT count(*) FROM task WHERE owner_id = $1 AND task_is_active(status)",
                                     limited)
    finally:
        await conn.close()
    return rows, active
