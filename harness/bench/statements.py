"""Round trips per task, counted from the PostgreSQL server's own statement log.

For one small closed-loop batch the run's embedded server logs every statement
(``log_statement = all``) under a prefix naming the backend's pid, database,
virtual transaction id and application name; the lines the site's processes
caused in the site's database are counted, each one a round trip. asyncpg's
extended protocol logs ``execute <name>: …`` once per executed statement, the
simple protocol (``BEGIN;``, ``COMMIT;``) ``statement: …``. Not in the log: the
Parse/Describe asyncpg sends once per statement it has not cached yet, and a
statement that fails before it runs — the batch runs warm, after the timed ones.
Statements sharing a virtual transaction id were one transaction.

The driver's own connections carry ``application_name = DRIVER`` and are left
out. The settings are the server's (``ALTER SYSTEM``), so only a server this run
started is reconfigured, and reset whatever happens; an external one is not
counted.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import asyncpg
import msgspec
import psutil

from harness.state import ServiceRecord, SiteRecord

from .accounts import Account
from .endtoend import database_name, submitter
from .loop import TASKS_FINISHED, Completions, closed_loop
from .measure import BenchError
from .results import RoundTrips

DRIVER = "sitekit-bench"
LINE_PREFIX = "%m [%p] db=%d vx=%v app=%a: "
# A line the prefix above starts (a statement's further lines start with a tab instead), for an
# executed statement: ``statement: SQL`` (simple protocol) or ``execute <name>: SQL`` (extended).
_STATEMENT = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[(?P<pid>\d+)\] db=(?P<database>\S*) vx=(?P<transaction>\S*) "
    r"app=(?P<application>.*?): LOG:  (?:statement|execute [^:]*): (?P<sql>.*)$",
    re.MULTILINE,
)
# Before the window: the previous batch's trailing statements are done; after it: the last task's are.
SETTLE_SECONDS = 1.0
TURN_ON_SECONDS = 10.0


class Logged(msgspec.Struct, frozen=True):
    pid: int
    database: str
    transaction: str  # virtual transaction id, unique within the backend
    application: str
    sql: str  # its first line


def logged_statements(text: str) -> list[Logged]:
    """The executed statements in a stretch of the server's log written with ``LINE_PREFIX``."""
    return [Logged(pid=int(m["pid"]), database=m["database"], transaction=m["transaction"],
                   application=m["application"], sql=m["sql"]) for m in _STATEMENT.finditer(text)]


def count(statements: Iterable[Logged], *, site: str, database: str, tasks: int,
          roles: dict[int, str]) -> RoundTrips:
    """The site's statements in ``database`` (the driver's left out), by the role of the backend's
    client process (``roles``: backend pid -> role; unmatched backends count as ``other``)."""
    ours = [s for s in statements if s.database == database and s.application != DRIVER]
    by_role = Counter(roles.get(s.pid, "other") for s in ours)
    return RoundTrips(site=site, tasks=tasks, statements=len(ours),
                      transactions=len({(s.pid, s.transaction) for s in ours}), by_role=dict(sorted(by_role.items())))


def read_log(path: Path, start: int, end: int) -> str:
    with open(path, "rb") as log:
        log.seek(start)
        return log.read(end - start).decode(errors="replace")


async def set_statement_log(server_url: str, on: bool) -> None:
    """Turn the server's statement log on or back to its defaults, on a connection of its own (the
    reset must not depend on the batch's connections having survived)."""
    conn = await asyncpg.connect(server_url, server_settings={"application_name": DRIVER})
    try:
        if on:
            await conn.execute("ALTER SYSTEM SET log_statement = 'all'")
            await conn.execute(f"ALTER SYSTEM SET log_line_prefix = '{LINE_PREFIX}'")
        else:
            await conn.execute("ALTER SYSTEM RESET log_statement")
            await conn.execute("ALTER SYSTEM RESET log_line_prefix")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


async def logging_started(server: asyncpg.Connection, path: Path) -> int:
    """Send a marker until the log shows it under the new prefix; returns the log's size then.

    pg_reload_conf() only signals the postmaster, which rereads the settings and signals every
    backend at once; each applies them before its next command. So once our backend logs the
    marker, every site backend logs whatever it runs next.
    """
    token = secrets.token_hex(8)
    offset = path.stat().st_size
    deadline = time.monotonic() + TURN_ON_SECONDS
    while True:
        await server.execute(f"SELECT 'statement log on {token}'")
        size = path.stat().st_size
        if any(token in s.sql for s in logged_statements(read_log(path, offset, size))):
            return size
        if time.monotonic() > deadline:
            raise BenchError(f"the server's statement log ({path}) did not turn on within {TURN_ON_SECONDS:.0f} s")
        await asyncio.sleep(0.05)


def client_ports(site: SiteRecord) -> dict[int, str]:
    """Local TCP port -> role, for every connection the site's processes (and their children) hold."""
    ports: dict[int, str] = {}
    for role in ("web", "worker"):
        for pid in getattr(site.pids, role):
            try:
                root = psutil.Process(pid)
                for process in (root, *root.children(recursive=True)):
                    ports.update((c.laddr.port, role) for c in process.net_connections(kind="tcp") if c.laddr)
            except psutil.Error:  # gone: its backends count as "other"
                continue
    return ports


async def backend_roles(server: asyncpg.Connection, database: str, site: SiteRecord) -> dict[int, str]:
    """Backend pid -> the role of the site process at the other end, matched by the client's port."""
    ports = client_ports(site)
    rows = await server.fetch("SELECT pid, client_port FROM pg_stat_activity WHERE datname = $1 AND client_port > 0",
                              database)
    return {row["pid"]: ports[row["client_port"]] for row in rows if row["client_port"] in ports}


async def round_trips(postgres: ServiceRecord, site: SiteRecord, accounts: list[Account], *, tasks: int) -> RoundTrips:
    """A closed-loop batch of ``tasks`` with the statement log on; ``site.pids`` must be the running ones."""
    if postgres.pid is None or not postgres.log:
        return RoundTrips(site=site.slug, tasks=tasks, not_counted="external PostgreSQL (its settings are not ours)")
    path, database = Path(postgres.log), database_name(site)
    server = await asyncpg.connect(postgres.url, server_settings={"application_name": DRIVER})
    poller = await asyncpg.connect(site.database_url, server_settings={"application_name": DRIVER})
    try:
        await asyncio.sleep(SETTLE_SECONDS)
        try:
            await set_statement_log(postgres.url, on=True)
            start = await logging_started(server, path)
            await closed_loop(submitter(site, accounts), Completions(poller, TASKS_FINISHED), tasks, len(accounts))
            await asyncio.sleep(SETTLE_SECONDS)
            roles = await backend_roles(server, database, site)
            end = path.stat().st_size
        finally:
            await set_statement_log(postgres.url, on=False)
    finally:
        await server.close()
        await poller.close()
    return count(logged_statements(read_log(path, start, end)), site=site.slug, database=database, tasks=tasks,
                 roles=roles)
