"""What a task writes: the write-ahead log's records a task costs, by kind and by relation.

    python -m harness.bench.wal --state DIR [--tasks 1000] [--top 40]

CPU a task moves with the machine's other work and with the rate (docs/benchmarks.md); what a task
writes does not. Every row version, index entry, row lock and commit is a record in the WAL, so
the records a task costs say exactly where its writes go: which index takes an entry at each
version of a row, which updates are HOT and which are not, which statements lock a row before
writing it. ``python -m harness bench`` reads it for every site after the rounds (``for_site``,
``--wal-tasks``); this command for a run's first site (``harness up``): a closed loop of ``--tasks``
tasks, each of eight clients an account of its own, the server's WAL position read around it and its
records read back with ``pg_walinspect`` (PostgreSQL 15 and later; its functions need the server's
superuser, which the run has). The extension lives in a scratch database made for the reading and
dropped after it: the site's own database is not touched.

Records of other databases are left out. Records that name no relation (a commit) cannot be told
apart by database: those are the server's, so the probe is meant for a run whose other sites are
idle.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import Counter

import asyncpg
import msgspec

from harness import state
from harness.services import create_database, drop_database, with_database
from harness.state import SiteRecord, SitesFile

from . import tables
from .accounts import Account, open_account
from .endtoend import database_name, submitter
from .loop import TASKS_FINISHED, Completions, closed_loop
from .measure import BenchError
from .results import WalAnatomy, WalCount

CLIENTS = 8
NO_RELATION = "-"

# "blkref #0: rel 1663/16384/16390 fork main blk 0": tablespace, database and file node of the
# first block a record touches (PostgreSQL 15's block_ref and later ones' alike).
_BLOCK = re.compile(r"rel \d+/(\d+)/(\d+)")

RECORDS = """
SELECT resource_manager, record_type, record_length, fpi_length, block_ref
FROM pg_get_wal_records_info($1::text::pg_lsn, $2::text::pg_lsn)
"""

# Relations by the file node their blocks are written under (it changes on TRUNCATE, so it is
# read when the records are, not before).
RELATIONS = """
SELECT pg_relation_filenode(c.oid)::text AS node, c.relname AS name
FROM pg_class c WHERE pg_relation_filenode(c.oid) IS NOT NULL
"""


class Record(msgspec.Struct, frozen=True):
    kind: str
    database: int | None  # the oid of the database of its first block, None for none
    node: str | None
    length: int
    full_page_length: int


def parse(resource_manager: str, record_type: str, block_ref: str | None, length: int,
          full_page_length: int | None) -> Record:
    """One row of ``pg_get_wal_records_info``. "INSERT+INIT" (the insert that starts a page) is an INSERT."""
    found = _BLOCK.search(block_ref or "")
    kind = f"{resource_manager}/{record_type.removesuffix('+INIT')}"
    return Record(kind=kind, database=int(found.group(1)) if found else None,
                  node=found.group(2) if found else None, length=length, full_page_length=full_page_length or 0)


def anatomy(records: list[Record], database: int, names: dict[str, str], tasks: int, site: str = "") -> WalAnatomy:
    """``records`` per task: those of ``database`` by relation (``names``, file node to name) and those of
    no relation; other databases' left out."""
    if tasks < 1:
        raise BenchError("WAL records a task need at least one task")
    counted = Counter()
    kept = [r for r in records if r.database in (None, database)]
    for record in kept:
        relation = NO_RELATION if record.node is None else names.get(record.node, f"file node {record.node}")
        counted[(record.kind, relation)] += 1

    def per_task(value: float) -> float:
        return round(value / tasks, 2)

    return WalAnatomy(
        site=site,
        tasks=tasks,
        records_per_task=per_task(len(kept)),
        bytes_per_task=per_task(sum(r.length for r in kept)),
        full_page_bytes_per_task=per_task(sum(r.full_page_length for r in kept)),
        counts=[WalCount(kind=kind, relation=relation, per_task=per_task(count))
                for (kind, relation), count in sorted(counted.items(), key=lambda item: (-item[1], item[0]))],
    )


class Reader:
    """The server's WAL, read through pg_walinspect in a scratch database of its own."""

    def __init__(self, server_url: str, scratch: str) -> None:
        self.server_url = server_url
        self.scratch = scratch
        self.conn: asyncpg.Connection | None = None

    async def open(self) -> None:
        await create_database(self.server_url, self.scratch)
        try:
            self.conn = await asyncpg.connect(with_database(self.server_url, self.scratch))
            await self.conn.execute("CREATE EXTENSION pg_walinspect")
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None
        await drop_database(self.server_url, self.scratch)

    async def __aenter__(self) -> Reader:
        await self.open()
        return self

    async def __aexit__(self, *_) -> None:
        await self.close()

    async def position(self) -> str:
        # Only flushed records can be read. Every commit of a batch is flushed before its task is seen
        # finished (synchronous_commit), so the flush position after the batch holds all of them.
        return await self.conn.fetchval("SELECT pg_current_wal_flush_lsn()::text")

    async def records(self, start: str, end: str) -> list[Record]:
        rows = await self.conn.fetch(RECORDS, start, end)
        return [parse(r["resource_manager"], r["record_type"], r["block_ref"], r["record_length"], r["fpi_length"])
                for r in rows]


async def relations(server_url: str, database: str) -> tuple[int, dict[str, str]]:
    """``database``'s oid and its relations by file node."""
    conn = await asyncpg.connect(with_database(server_url, database))
    try:
        oid = await conn.fetchval("SELECT oid FROM pg_database WHERE datname = current_database()")
        return oid, {row["node"]: row["name"] for row in await conn.fetch(RELATIONS)}
    finally:
        await conn.close()


def table(found: WalAnatomy, top: int) -> str:
    head = (f"{found.site}, {found.tasks} tasks: {found.records_per_task} WAL records a task, "
            f"{found.bytes_per_task:.0f} bytes ({found.full_page_bytes_per_task:.0f} of them full-page images)\n\n")
    return head + tables.table(["record", "relation", "a task"],
                               [[c.kind, c.relation, c.per_task] for c in found.counts[:top]], markdown=True)


async def for_site(server_url: str, site: SiteRecord, accounts: list[Account], *, tasks: int) -> WalAnatomy:
    """A closed loop of ``tasks`` of ``site``'s tasks, one client an account of ``accounts``, after one
    warm task each, and the WAL records it wrote. ``server_url``: the server's superuser. A server
    without pg_walinspect (or without the right to it) is reported, not counted."""
    conn = await asyncpg.connect(site.database_url)
    try:
        start = submitter(site, accounts)
        # warm: connections, prepared statements and each account's first rows before the reading
        await closed_loop(start, Completions(conn, TASKS_FINISHED), len(accounts), len(accounts))
        reader = Reader(server_url, f"{database_name(site)}_wal")
        try:
            await reader.open()
        except (asyncpg.PostgresError, OSError) as error:
            return WalAnatomy(site=site.slug, tasks=0, not_counted=f"pg_walinspect: {type(error).__name__}")
        try:
            begin = await reader.position()
            batch = await closed_loop(start, Completions(conn, TASKS_FINISHED), tasks, len(accounts))
            end = await reader.position()
            database, names = await relations(server_url, database_name(site))
            return anatomy(await reader.records(begin, end), database, names, len(batch.jobs), site.slug)
        finally:
            await reader.close()
    finally:
        await conn.close()


async def run(sites: SitesFile, tasks: int) -> WalAnatomy:
    site = sites.sites[0]
    accounts = [await open_account(site, index) for index in range(CLIENTS)]
    try:
        return await for_site(sites.services.postgres.url, site, accounts, tasks=tasks)
    finally:
        for account in accounts:
            await account.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.wal")
    parser.add_argument("--state", type=state.run_folder, required=True,
                        help="a run's state folder (harness up)")
    parser.add_argument("--tasks", type=int, default=1000, help="tasks in the batch read")
    parser.add_argument("--top", type=int, default=40, help="rows of the table, most first")
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.top < 1:
        parser.error("--tasks and --top must be at least 1")
    sites = state.load(args.state)
    found = asyncio.run(run(sites, args.tasks))
    if found.not_counted:
        raise SystemExit(f"not counted: {found.not_counted}")
    print(table(found, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
