"""Cost as history grows: one site as it is, then holding ``history_tasks`` more tasks of history.

At each size: submit latency (one client after another, workers stopped, so nothing but the
submit is timed), first-page list latency, maintenance passes and one audit (both timed in
the site's own interpreter, history_probe.py). The submitted tasks are canceled before the pass,
so both passes find the same work. The history is seeded straight into the site's database with
``generate_series`` in a few statements, shaped so the audit holds: finished tasks of a thousand
accounts, spread over the retention window (nothing is due for pruning), succeeded ones with a
deleted result row and one succeeded attempt, failed ones with one failed attempt, canceled
ones with none. The newest results are still live, a ready row with its object in the site's
bucket (``live_results``: a tenth of the tasks, at most LIVE_RESULTS), so the bucket holds what
a site keeps and a step that reads the bucket is measured too. The audit is expected to grow
linearly with the rows and objects; everything else to stay flat.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg
import httpx

from harness import services, state
from harness.state import SiteRecord

from .accounts import Account, open_account, site_policy
from .measure import BenchError, latency, ratio
from .results import SUBMITS_PER_ACCOUNT, History, HistorySize

PROBE = Path(__file__).with_name("history_probe.py")
TASKS_PER_ACCOUNT = 1000
# The newest results of the seeded history are live, each with its object (put over S3, so a
# tenth of the tasks at most this many: 20,000 objects take about half a minute here).
LIVE_RESULTS = 20_000
LIVE_BODY = b"history\n"
PUTS_AT_ONCE = 16

# Everything a seeded task needs beyond its columns' defaults; $1 = how many, $2 = the run's tag (so two
# seedings never collide), $3 = the retention in days. Task n: succeeded (n % 20 >= 2), failed (n % 20 = 1)
# or canceled (n % 20 = 0), finished at a moment spread over the window, newest first.
SEED_ACCOUNTS = """
INSERT INTO account (id, email, password_hash)
SELECT md5($2 || 'a' || a)::uuid, 'history-' || $2 || '-' || a || '@example.com', 'not a password hash'
FROM generate_series(0, $1 - 1) AS a
"""
# Results: deleted long since, but for the newest $5 tasks' (SEED_LIVE_RESULTS).
SEED_RESULTS = """
INSERT INTO file (id, owner_id, name, content_type, size, sha256, status, object_key, kind, created_at, updated_at,
                  ready_at, expires_at, deleted_at)
SELECT md5($2 || 'r' || n)::uuid, md5($2 || 'a' || (n % $4))::uuid, 'input.txt', 'text/plain', 100,
       sha256(n::text::bytea), 'deleted', 'history/' || $2 || '/' || n, 'result', f, f, f,
       f + interval '7 days', f + interval '7 days'
FROM generate_series($5::integer, $1::integer - 1) AS n,
     LATERAL (SELECT now() - ($3 - 1) * interval '1 day' * (n + 1)::float8 / $1) AS at(f)
WHERE n % 20 >= 2
"""
# The newest $5 tasks' results: ready, under the site's key $6/<owner>/<file>, holding $7 (their objects
# are put once this commits).
SEED_LIVE_RESULTS = """
INSERT INTO file (id, owner_id, name, content_type, size, sha256, status, object_key, kind, created_at, updated_at,
                  ready_at, expires_at)
SELECT md5($2 || 'r' || n)::uuid, md5($2 || 'a' || (n % $4))::uuid, 'input.txt', 'text/plain', length($7::bytea),
       sha256($7::bytea), 'ready',
       $6::text || '/' || md5($2 || 'a' || (n % $4))::uuid || '/' || md5($2 || 'r' || n)::uuid,
       'result', f, f, f, now() + interval '7 days'
FROM generate_series(0, least($5::integer, $1::integer) - 1) AS n,
     LATERAL (SELECT now() - ($3 - 1) * interval '1 day' * (n + 1)::float8 / $1) AS at(f)
WHERE n % 20 >= 2
RETURNING object_key
"""
# The live results' bytes counted against their owners' quota, as an upload's are.
SEED_USAGE = """
INSERT INTO storage_usage (account_id, used_bytes)
SELECT owner_id, sum(size) FROM file WHERE status = 'ready' AND object_key = ANY($1::text[]) GROUP BY owner_id
"""
SEED_TASKS = """
INSERT INTO task (id, owner_id, request_key, request_fingerprint, processor, processor_version, input_file_id,
                  input_name, input_size, input_sha256, params, status, attempt_count, max_attempts, lease_version,
                  dispatch_version, error_code, result_file_id, created_at, updated_at, finished_at)
SELECT md5($2 || 't' || n)::uuid, md5($2 || 'a' || (n % $4))::uuid, md5($2 || 'k' || n)::uuid,
       sha256(('f' || n)::bytea), 'text-normalize', 1, md5($2 || 'i' || n)::uuid, 'input.txt', 100,
       sha256('input'::bytea), '{"trimTrailingWhitespace": false}'::jsonb,
       CASE n % 20 WHEN 0 THEN 'canceled' WHEN 1 THEN 'failed' ELSE 'succeeded' END,
       CASE n % 20 WHEN 0 THEN 0 ELSE 1 END, 3, CASE n % 20 WHEN 0 THEN 0 ELSE 1 END, 1,
       CASE n % 20 WHEN 1 THEN 'INPUT_INVALID' END,
       CASE WHEN n % 20 >= 2 THEN md5($2 || 'r' || n)::uuid END,
       f - interval '1 second', f, f
FROM generate_series(0, $1 - 1) AS n,
     LATERAL (SELECT now() - ($3 - 1) * interval '1 day' * (n + 1)::float8 / $1) AS at(f)
"""
SEED_ATTEMPTS = """
INSERT INTO task_attempt (task_id, lease_version, started_at, ended_at, outcome, error_code)
SELECT md5($2 || 't' || n)::uuid, 1, f - interval '1 second', f,
       CASE n % 20 WHEN 1 THEN 'failed' ELSE 'succeeded' END, CASE n % 20 WHEN 1 THEN 'INPUT_INVALID' END
FROM generate_series(0, $1 - 1) AS n,
     LATERAL (SELECT now() - ($3 - 1) * interval '1 day' * (n + 1)::float8 / $1) AS at(f)
WHERE n % 20 <> 0
"""
COUNT = "SELECT (SELECT count(*) FROM task) AS tasks, (SELECT count(*) FROM task_attempt) AS attempts, " \
        "(SELECT count(*) FROM file) AS files"


def live_results(tasks: int) -> int:
    """How many of ``tasks`` seeded tasks (the newest) keep a live result with its object."""
    return min(LIVE_RESULTS, tasks // 10)


async def put_objects(s3: state.S3Record, bucket: str, keys: list[str]) -> None:
    room = asyncio.Semaphore(PUTS_AT_ONCE)
    async with services.s3_client(s3) as client:

        async def put(key: str) -> None:
            async with room:
                await client.put_object(Bucket=bucket, Key=key, Body=LIVE_BODY, ContentType="text/plain")

        await asyncio.gather(*(put(key) for key in keys))


async def seed(s3: state.S3Record, site: SiteRecord, tasks: int, days: int) -> tuple[float, int]:
    """``tasks`` finished tasks of history in the site's database, the newest results' objects in its
    bucket; returns the seconds it took and how many objects."""
    tag = uuid.uuid4().hex[:8]
    accounts = max(1, tasks // TASKS_PER_ACCOUNT)
    began = time.perf_counter()
    conn = await asyncpg.connect(site.database_url)
    try:
        async with conn.transaction():
            await conn.execute(SEED_ACCOUNTS, accounts, tag)
            newest = live_results(tasks)
            await conn.execute(SEED_RESULTS, tasks, tag, days, accounts, newest)
            live = [row["object_key"] for row in await conn.fetch(SEED_LIVE_RESULTS, tasks, tag, days, accounts,
                                                                  newest, site.object_prefix, LIVE_BODY)]
            await conn.execute(SEED_USAGE, live)
            await conn.execute(SEED_TASKS, tasks, tag, days, accounts)
            await conn.execute(SEED_ATTEMPTS, tasks, tag, days)
        for table in ("account", "file", "task", "task_attempt"):  # as autovacuum would have long since
            await conn.execute(f"VACUUM ANALYZE {table}")
    finally:
        await conn.close()
    await put_objects(s3, site.bucket, live)
    return round(time.perf_counter() - began, 1), len(live)


def probe(state_dir: Path, site: SiteRecord) -> dict:
    """One maintenance pass and one audit, timed in the site's interpreter."""
    done = subprocess.run([site.venv_python, str(PROBE), "--slug", site.slug],
                          env=state.load_site_env(state_dir, site.slug), cwd=site.site_dir, capture_output=True,
                          text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise BenchError(f"{site.slug}: the maintenance and audit probe failed: {done.stderr.strip()[-300:]}")
    return json.loads(done.stdout)


async def _timed(account: Account, samples: int, call: Callable[[Account], Awaitable[httpx.Response]],
                 answers: list[dict] | None = None) -> list[float]:
    """``samples`` calls one after another, each timed; their bodies appended to ``answers``."""
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        response = await call(account)
        times.append(time.perf_counter() - began)
        if response.status_code not in (200, 201):
            raise BenchError(f"{account.site.slug}: answered {response.status_code}: {response.text[:200]}")
        if answers is not None:
            answers.append(response.json())
    return times


async def open_history_accounts(site: SiteRecord, samples: int, first_index: int) -> list[list[Account]]:
    """Fresh accounts for each of the two measures (the site empty, then full). Opened while the site's
    workers run: a site that asks for proven addresses mails the link from its worker, which this
    phase stops."""
    needed = -(-samples // SUBMITS_PER_ACCOUNT)
    return [list(await asyncio.gather(*(open_account(site, first + i) for i in range(needed))))
            for first in (first_index, first_index + 1000)]


async def measure(state_dir: Path, site: SiteRecord, samples: int, accounts: list[Account]) -> HistorySize:
    """Submit and list latency with fresh accounts, then (their tasks canceled) a pass and the audit."""
    try:
        for account in accounts:  # idle meanwhile: connect anew
            await account.reconnect()
        submits: list[float] = []
        for index, account in enumerate(accounts):
            share = min(SUBMITS_PER_ACCOUNT, samples - index * SUBMITS_PER_ACCOUNT)
            created: list[dict] = []
            submits += await _timed(account, share, lambda a: a.submit(), created)
            for task in created:  # so the pass after finds no work of ours to re-send
                await account.http.post(f"/api/tasks/{task['id']}/cancel")
        await _timed(accounts[0], 3, lambda a: a.http.get("/api/tasks"))  # warm
        lists = await _timed(accounts[0], samples, lambda a: a.http.get("/api/tasks"))
    finally:
        for account in accounts:
            await account.close()
    conn = await asyncpg.connect(site.database_url)
    try:
        rows = await conn.fetchrow(COUNT)
    finally:
        await conn.close()
    probed = await asyncio.to_thread(probe, state_dir, site)
    return HistorySize(tasks=rows["tasks"], attempts=rows["attempts"], files=rows["files"], submit=latency(submits),
                       list_first_page=latency(lists), maintenance_s=probed["maintenance_s"],
                       maintenance_steps=probed["steps"], audit_s=probed["audit_s"],
                       audit_clean=probed["audit_clean"], audit_findings=probed["findings"][:20],
                       first_pass_s=probed["first_pass_s"], step_s=probed["step_s"])


async def history(state_dir: Path, site: SiteRecord, *, tasks: int, samples: int,
                  accounts: list[list[Account]]) -> History:
    """The site as it is, then with ``tasks`` more tasks of history (``accounts``: open_history_accounts')."""
    days = site_policy(site)["tasks"].get("history_days", 90)
    empty_accounts, full_accounts = accounts
    try:
        empty = await measure(state_dir, site, samples, empty_accounts)
        seconds, objects = await seed(state.load(state_dir).services.s3, site, tasks, days)
    except BaseException:
        for account in full_accounts:
            await account.close()
        raise
    full = await measure(state_dir, site, samples, full_accounts)
    added = full.tasks - empty.tasks
    per_100k = round((full.audit_s - empty.audit_s) / added * 100_000, 2) if added > 0 else None
    return History(site=site.slug, seeded=tasks, seed_seconds=seconds, empty=empty, full=full, live_objects=objects,
                   audit_s_per_100k_tasks=per_100k,
                   submit_p99_ratio=ratio(full.submit.p99, empty.submit.p99),
                   list_p99_ratio=ratio(full.list_first_page.p99, empty.list_first_page.p99),
                   maintenance_ratio=ratio(full.maintenance_s, empty.maintenance_s))

