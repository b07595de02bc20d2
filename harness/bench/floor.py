"""The PostgreSQL floor: what the rows a task must write cost the server, beside the naive site's rows
and the site's own calls.

Issue 33 asks for PostgreSQL at most 1.0 ms of CPU a task. What a task writes is not free to choose:
SPEC §6 asks for three commits (submit, claim, publication) and for the rows they leave. Four pgbench
scripts, each one task's statements, run against the site's schema on the run's server, in
interleaved rounds; the server's CPU a task is read around each run as the postgres group reads it
(cpu.py: backends and the ones that ended), the run's own vacuum included (vacuum.py):

- ``naive``: the naive site's two commits (insert its row, mark it), on a table like its own;
- ``bare``: the rows SPEC §6 asks of a task in three commits of one statement each — the task and its
  pin; the running task, its reserved result file and its attempt; the ready file, the succeeded task,
  the ended attempt, the pin gone — on copies of the site's tables that keep only the keys the statements
  find rows by;
- ``rows``: the same statements on the site's tables (their indexes, constraints, foreign keys);
- ``calls``: the site's three calls (task_submit, task_claim, task_publish) with the arguments its web
  and worker pass for a free task: every check, lock, count and reservation of a real one.

``rows`` minus ``bare`` is what the tables' indexes and constraints cost a task, ``calls`` minus ``rows``
what the calls' checks and locks add. A live batch adds the session read of each request and the driver's polls.
Each round runs every script twice: one client as fast as it goes (a task's statements alone, the server
never idle), then as a live batch goes (``Pace``: its clients, held to its rate), where each statement finds
its backend idle since the last. Each client is an account of its own (``owner_of``): clients never wait on
each other's account locks.

The scripts run as the server's superuser, in a scratch database of the run's server holding the site's
schema (its own migrations), the accounts and their ready inputs; the copies and the naive table live in a
schema of their own there. Before each run every table a script can write is emptied, the same finished
tasks of history seeded (``HISTORY``), the accounts and their inputs put back and the statistics taken: each
run starts from the same tables, whatever ran before it. The database is dropped afterwards.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from pathlib import Path
from string import Template
from uuid import UUID

import asyncpg
import msgspec
import psutil

from harness.services import create_database, drop_database, with_database
from harness.state import SiteRecord

from . import cpu
from .accounts import input_text
from .ceiling import run_pgbench
from .endtoend import database_name
from .history import SEED_ACCOUNTS, SEED_ATTEMPTS, SEED_RESULTS, SEED_TASKS, TASKS_PER_ACCOUNT
from .measure import BenchError
from .results import Floor, FloorRun
from .vacuum import Vacuum

SCHEMA = "bench_floor"
SCRIPTS = ("naive", "bare", "rows", "calls")
_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.MULTILINE)

# The copies keep each column and default, and only the keys the statements find rows by (an attempt
# by its task and lease version): what the same rows cost without the site's other indexes, its
# constraints and foreign keys.
PREPARE = f"""
DROP SCHEMA IF EXISTS {SCHEMA} CASCADE;
CREATE SCHEMA {SCHEMA};
CREATE TABLE {SCHEMA}.task (LIKE public.task INCLUDING DEFAULTS, PRIMARY KEY (id));
CREATE TABLE {SCHEMA}.file (LIKE public.file INCLUDING DEFAULTS, PRIMARY KEY (id));
CREATE TABLE {SCHEMA}.task_attempt (
    LIKE public.task_attempt INCLUDING DEFAULTS INCLUDING IDENTITY, PRIMARY KEY (id), UNIQUE (task_id, lease_version)
);
CREATE TABLE {SCHEMA}.task_input_pin (LIKE public.task_input_pin INCLUDING DEFAULTS, PRIMARY KEY (task_id));
-- the naive site's table (naive_site.py)
CREATE TABLE {SCHEMA}.naive_task (
    id uuid PRIMARY KEY, request_key text NOT NULL, processor text NOT NULL, file_id uuid NOT NULL,
    status text NOT NULL DEFAULT 'queued', error_code text, created_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
"""

# One task's statements, each script in a file of its own; ``bare`` runs ``rows`` on the copies.
SOURCES = {"naive": "naive.sql", "bare": "rows.sql", "rows": "rows.sql", "calls": "calls.sql"}
SQL_DIR = Path(__file__).with_name("floor_sql")


class Subject(msgspec.Struct, frozen=True):
    """Whose tasks the scripts make: an account of the site for each pgbench client (``accounts``), each with
    its ready text input of ``size`` bytes. Client ``n``'s account is ``owner_of(n)``: a script finds its own
    from pgbench's ``:client_id``, so clients never share an account's rows and locks."""

    size: int  # the input's bytes
    sha256: bytes
    prefix: str  # the site's object prefix
    accounts: int = 1


def subject_for(prefix: str, data: bytes, accounts: int = 1) -> Subject:
    """``accounts`` accounts, each with input ``data`` under the site's object ``prefix``."""
    return Subject(size=len(data), sha256=hashlib.sha256(data).digest(), prefix=prefix, accounts=accounts)


# Client n's account and input, in SQL (n: an integer expression) and in Python (tests).
_OWNER = "md5('floor-owner-' || {n})::uuid"
_INPUT = "md5('floor-input-' || {n})::uuid"


def owner_of(client: int) -> UUID:
    return UUID(hashlib.md5(f"floor-owner-{client}".encode()).hexdigest())


# The accounts and their ready inputs, as registering and uploading leave them (auth/, files/);
# $1 how many, $2 the input's size, $3 its digest, $4 the site's object prefix.
SEED = f"""
WITH a AS (
    INSERT INTO account (id, email, password_hash)
    SELECT {_OWNER.format(n="n")}, 'floor-' || n || '@example.invalid', 'x' FROM generate_series(0, $1 - 1) AS n
), f AS (
    INSERT INTO file (id, owner_id, name, content_type, size, sha256, status, object_key, ready_at, expires_at, kind)
    SELECT {_INPUT.format(n="n")}, {_OWNER.format(n="n")}, 'input.txt', 'text/plain', $2::bigint, $3::bytea, 'ready',
           $4::text || '/' || {_OWNER.format(n="n")} || '/' || {_INPUT.format(n="n")}, now(),
           now() + interval '1 day', 'upload'
    FROM generate_series(0, $1 - 1) AS n
)
-- (the foreign keys are checked at the statement's end, when every part has run)
INSERT INTO storage_usage (account_id, used_bytes)
SELECT {_OWNER.format(n="n")}, $2::bigint FROM generate_series(0, $1 - 1) AS n
"""

# The finished tasks every run starts with: a site some days old, whose indexes are as deep as a live
# one's and whose statistics the planner believes.
HISTORY = 10_000
HISTORY_DAYS = 7
HISTORY_TAG = "floor"
# The same history in the copies (the naive table keeps what it has of each task).
COPY_HISTORY = f"""
INSERT INTO {SCHEMA}.task SELECT * FROM public.task;
INSERT INTO {SCHEMA}.file SELECT * FROM public.file;
INSERT INTO {SCHEMA}.task_attempt OVERRIDING SYSTEM VALUE SELECT * FROM public.task_attempt;
SELECT setval(pg_get_serial_sequence('{SCHEMA}.task_attempt', 'id'), max(id)) FROM {SCHEMA}.task_attempt;
INSERT INTO {SCHEMA}.naive_task (id, request_key, processor, file_id, status, error_code, created_at, finished_at)
SELECT id, request_key, processor, input_file_id, status, error_code, created_at, finished_at FROM public.task;
"""

# Every table of the scratch database. A reset empties the ones the migrations left empty, but not those
# that refuse a TRUNCATE (the append-only logs: nothing a script does writes them, and a test checks that
# a reset leaves every table as it found it).
_TABLES = """
SELECT format('%I.%I', schemaname, relname) AS name,
       EXISTS (SELECT FROM pg_trigger WHERE tgrelid = relid AND tgtype & 32 <> 0) AS refuses_truncate
FROM pg_stat_user_tables ORDER BY 1
"""


async def _kept_tables(conn: asyncpg.Connection) -> set[str]:
    """The tables holding rows right after the migrations (what they seed, kept as it is), and those
    that refuse a TRUNCATE."""
    kept = set()
    for row in await conn.fetch(_TABLES):
        if row["refuses_truncate"] or await conn.fetchval(f"SELECT EXISTS (SELECT FROM {row['name']})"):
            kept.add(row["name"])
    return kept


async def create_scratch(server_url: str, database: str, migrations: Path) -> set[str]:
    """``database`` on the server, with the site's schema (``migrations`` applied in order), the copies and
    the naive table; returns the tables a reset empties (every one the migrations left empty)."""
    await drop_database(server_url, database)
    await create_database(server_url, database)
    conn = await asyncpg.connect(with_database(server_url, database))
    try:
        for migration in sorted(migrations.glob("*.sql")):
            await conn.execute(migration.read_text())
        kept = await _kept_tables(conn)
        await conn.execute(PREPARE)
        return {row["name"] for row in await conn.fetch(_TABLES)} - kept
    finally:
        await conn.close()


async def reset(url: str, emptied: set[str], subject: Subject) -> None:
    """Empty ``emptied``, seed ``HISTORY`` finished tasks (history.py's rows, the same every time) on the
    site's tables and their copies, and put the accounts and their inputs back: what every run starts from,
    its statistics taken (a plan made for empty tables scans them whole once they fill)."""
    accounts = max(1, HISTORY // TASKS_PER_ACCOUNT)
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.execute(f"TRUNCATE {', '.join(sorted(emptied))} RESTART IDENTITY")
            await conn.execute(SEED_ACCOUNTS, accounts, HISTORY_TAG)
            await conn.execute(SEED_RESULTS, HISTORY, HISTORY_TAG, HISTORY_DAYS, accounts, 0)
            await conn.execute(SEED_TASKS, HISTORY, HISTORY_TAG, HISTORY_DAYS, accounts)
            await conn.execute(SEED_ATTEMPTS, HISTORY, HISTORY_TAG, HISTORY_DAYS)
            await conn.execute(COPY_HISTORY)
            await conn.execute(SEED, subject.accounts, subject.size, subject.sha256, subject.prefix)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


def script(name: str, subject: Subject) -> str:
    """The pgbench script ``name`` for ``subject``: one task's statements, as the client's own account."""
    if subject.size < 1:
        raise BenchError("the floor's input must not be empty (the result is written smaller than it)")
    schema = "public" if name in ("rows", "calls") else SCHEMA
    return Template((SQL_DIR / SOURCES[name]).read_text()).substitute(
        schema=schema, owner=_OWNER.format(n=":client_id"), file=_INPUT.format(n=":client_id"), size=subject.size,
        result_size=subject.size - 1, prefix=subject.prefix)


def processed(output: str) -> int:
    match = _PROCESSED.search(output)
    if match is None:
        raise BenchError(f"pgbench printed no count of transactions: {output.strip()[-300:]}")
    return int(match.group(1))


def _live_children(pid: int) -> int:
    try:
        return len(psutil.Process(pid).children())
    except psutil.NoSuchProcess:
        return 0


async def _settled(postmaster: int, live: int) -> None:
    """Until the postmaster has no more children than ``live``, for at most 2 s: the kernel adds an ended
    backend's CPU to its parent's count only once the parent has waited for it, and a reading in between
    would see it in neither. (A site whose pool opened a connection meanwhile keeps it: the wait ends.)"""
    deadline = time.monotonic() + 2
    while _live_children(postmaster) > live and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


class Pace(msgspec.Struct, frozen=True):
    """Runs at a live batch's pace: ``clients`` in flight, ``rate`` tasks a second all together."""

    clients: int
    rate: float


def _modes(pace: Pace | None) -> list[tuple[int, float]]:
    """(clients, tasks a second, 0: as fast as they go) of each round's runs: one client flat out, then
    ``pace``'s."""
    return [(1, 0.0), *([(pace.clients, pace.rate)] if pace else [])]


async def measure(server_url: str, postmaster: int, database: str, migrations: Path, subject: Subject, *,
                  site: str, rounds: int, seconds: int, scripts_dir: Path, pace: Pace | None = None) -> Floor:
    """Each script for ``seconds`` in every round, in alternating order, each run from the same tables: one
    client as fast as it goes, then (given ``pace``) as many as a live batch at its rate. ``server_url`` the
    run's own server as its superuser (``postmaster`` its pid), ``database`` the scratch database made there
    from ``migrations`` (the site's) and dropped afterwards."""
    if pace and subject.accounts < pace.clients:
        raise BenchError("the floor needs an account for each client (clients sharing one wait on its locks)")
    url = with_database(server_url, database)
    vacuum = Vacuum(server_url, database)
    groups = {"postgres": {postmaster}}
    scripts_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in SCRIPTS:
        paths[name] = scripts_dir / f"{name}.sql"
        paths[name].write_text(script(name, subject))
    runs = []
    try:
        emptied = await create_scratch(server_url, database, migrations)
        for number in range(1, rounds + 1):
            for clients, rate in _modes(pace):
                for name in SCRIPTS if number % 2 else SCRIPTS[::-1]:
                    live = _live_children(postmaster)
                    await reset(url, emptied, subject)
                    await vacuum.own()  # no run inherits another's dead rows
                    await _settled(postmaster, live)
                    before = cpu.reading(groups)
                    paced = ["-R", f"{rate:g}"] if rate else []
                    output = await asyncio.to_thread(
                        run_pgbench, url, "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)),
                        "-T", str(seconds), *paced, "-f", str(paths[name]))
                    await vacuum.own()  # and pays for its own
                    await _settled(postmaster, live)
                    used = cpu.reading(groups)["postgres"] - before["postgres"]
                    tasks = processed(output)
                    if not tasks:
                        raise BenchError(f"the floor's {name} script made no task in {seconds} s")
                    runs.append(FloorRun(script=name, round=number, tasks=tasks, clients=clients, rate=rate,
                                         ms_per_task=round(1000 * used / tasks, 3)))
    finally:
        await drop_database(server_url, database)
    return Floor(site=site, seconds=seconds, runs=runs, history=HISTORY)


def scratch_name(site: SiteRecord) -> str:
    return f"{database_name(site)}_floor"


async def for_site(site: SiteRecord, server_url: str, postmaster: int, *, rounds: int, seconds: int,
                   scripts_dir: Path, pace: Pace | None = None) -> Floor:
    """The floor of ``site``'s schema: its own migrations, in a scratch database beside its own, for
    accounts holding an input like the bench's (one for each client)."""
    subject = subject_for(site.object_prefix, input_text(0), accounts=pace.clients if pace else 1)
    return await measure(server_url, postmaster, scratch_name(site), Path(site.site_dir) / site.slug / "migrations",
                         subject, site=site.slug, rounds=rounds, seconds=seconds, scripts_dir=scripts_dir, pace=pace)
