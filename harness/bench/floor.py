"""The PostgreSQL floor: what the rows a task must write cost the server, beside the naive site's rows
and the site's own calls.

Issue 33 asks for PostgreSQL at most 1.0 ms of CPU a task. What a task writes is not free to choose:
SPEC §6 asks for three commits (submit, claim, publication) and for the rows they leave. Four pgbench
scripts, each one task's statements, run against the site's own database on the run's server, in
interleaved rounds; the server's CPU a task is read around each run as the postgres group reads it
(cpu.py: backends and the ones that ended), the run's own vacuum included (vacuum.py):

- ``naive``: the naive site's two commits (insert its row, mark it), on a table like its own;
- ``bare``: the rows SPEC §6 asks of a task in three commits of one statement each — the task and its
  pin; the running task, its reserved result file and its attempt; the ready file, the succeeded task,
  the ended attempt, the pin gone — on copies of the site's tables that keep only the keys the statements
  find rows by;
- ``rows``: the same statements on the site's own tables (their indexes, constraints, foreign keys);
- ``calls``: the site's three calls (task_submit, task_claim, task_publish) with the arguments its web
  and worker pass for a free task: every check, lock, count and reservation of a real one.

``rows`` minus ``bare`` is what the tables' indexes and constraints cost a task, ``calls`` minus ``rows``
what the calls' checks and locks add. A live batch adds the session read of each request and the driver's polls.
The bench runs one client: a task's statements alone, never waiting on another task's locks.

The scripts run as the server's superuser. The copies and the naive table live in a scratch schema,
dropped afterwards; the tasks are made for an account registered for the purpose (``for_site``), deleted
afterwards with everything it owns.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from string import Template
from uuid import UUID

import msgspec
import psutil

from harness.services import execute_on_server, with_database
from harness.state import SiteRecord

from . import cpu
from .accounts import open_account
from .ceiling import run_pgbench
from .endtoend import database_name
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
    """Whose tasks the scripts make: an account of the site and its ready text input."""

    owner: UUID
    file: UUID
    size: int  # the input's bytes
    prefix: str  # the site's object prefix


def script(name: str, subject: Subject) -> str:
    """The pgbench script ``name`` for ``subject``: one task's statements."""
    if subject.size < 1:
        raise BenchError("the floor's input must not be empty (the result is written smaller than it)")
    schema = "public" if name in ("rows", "calls") else SCHEMA
    return Template((SQL_DIR / SOURCES[name]).read_text()).substitute(
        schema=schema, owner=subject.owner, file=subject.file, size=subject.size, result_size=subject.size - 1,
        prefix=subject.prefix)


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


async def measure(server_url: str, postmaster: int, database: str, subject: Subject, *, site: str, rounds: int,
                  seconds: int, clients: int, scripts_dir: Path) -> Floor:
    """Each script for ``seconds`` with ``clients`` in every round, in alternating order; ``server_url`` the
    run's own server as its superuser (``postmaster`` its pid), ``database`` the site's."""
    url = with_database(server_url, database)
    vacuum = Vacuum(server_url, database)
    groups = {"postgres": {postmaster}}
    scripts_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in SCRIPTS:
        paths[name] = scripts_dir / f"{name}.sql"
        paths[name].write_text(script(name, subject))
    await execute_on_server(url, PREPARE)
    runs = []
    try:
        for number in range(1, rounds + 1):
            for name in SCRIPTS if number % 2 else SCRIPTS[::-1]:
                live = _live_children(postmaster)
                await vacuum.own()  # no run inherits another's dead rows
                await _settled(postmaster, live)
                before = cpu.reading(groups)
                output = await asyncio.to_thread(run_pgbench, url, "-n", "-M", "prepared", "-c", str(clients),
                                                 "-j", str(min(clients, 2)), "-T", str(seconds), "-f", str(paths[name]))
                await vacuum.own()  # and pays for its own
                await _settled(postmaster, live)
                used = cpu.reading(groups)["postgres"] - before["postgres"]
                tasks = processed(output)
                if not tasks:
                    raise BenchError(f"the floor's {name} script made no task in {seconds} s")
                runs.append(FloorRun(script=name, round=number, tasks=tasks,
                                     ms_per_task=round(1000 * used / tasks, 3)))
    finally:
        await execute_on_server(url, f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    return Floor(site=site, clients=clients, seconds=seconds, runs=runs)


async def for_site(site: SiteRecord, server_url: str, postmaster: int, *, rounds: int, seconds: int,
                   scripts_dir: Path) -> Floor:
    """The floor on ``site``'s database, for an account of its own (registered and given an input as the
    bench's are), which goes afterwards with everything it owns."""
    database = database_name(site)
    account = await open_account(site, 1_000_000)
    try:
        subject = Subject(owner=UUID(account.id), file=UUID(account.file_id), size=len(account.data),
                          prefix=site.object_prefix)
        return await measure(server_url, postmaster, database, subject,
                             site=site.slug, rounds=rounds, seconds=seconds, clients=1, scripts_dir=scripts_dir)
    finally:
        await account.close()
        await execute_on_server(with_database(server_url, database), "DELETE FROM account WHERE id = $1",
                                UUID(account.id))
