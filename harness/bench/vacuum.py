"""Each batch pays for cleaning up after itself, and for no other batch.

A batch's updates and deletes leave dead rows, which PostgreSQL's autovacuum workers reclaim
later: maybe during the next batch, of another system, which would then be charged for them (the
postgres group counts every child of the postmaster, ended ones too: cpu.py). So before a batch's
window opens, every database of the run's server is vacuumed (no batch starts with another's dead
rows), and after its last task the batch's own database is vacuumed again, what that costs added to
the batch's CPU (what is left of its dead rows, reclaimed by a backend the postgres group counts).
Autovacuum stays on: a worker it starts on the batch's database during the window is the batch's too.
A vacuum commits a transaction per table, so both stay out of a window that counts commits.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import asyncpg
import msgspec

from harness.state import Services

DATABASES = "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname"


class Vacuum(msgspec.Struct, frozen=True):
    server_url: str  # the run's own server, as its superuser
    database: str  # the batch's

    async def _vacuum(self, database: str) -> None:
        conn = await asyncpg.connect(self.server_url, database=database)
        try:
            await conn.execute("VACUUM")
        finally:
            await conn.close()

    async def clean_slate(self) -> None:
        """Every database's dead rows reclaimed: before the window."""
        conn = await asyncpg.connect(self.server_url)
        try:
            databases = [row["datname"] for row in await conn.fetch(DATABASES)]
        finally:
            await conn.close()
        for database in databases:
            await self._vacuum(database)

    async def own(self) -> None:
        """The batch's own dead rows reclaimed: after its last task, its CPU counted as the batch's."""
        await self._vacuum(self.database)


def for_batch(services: Services, database_url: str) -> Vacuum | None:
    """For a batch on ``database_url``'s database; None on an external server: its CPU is not measured,
    so there is nothing to attribute."""
    if not services.postgres.pid:
        return None
    return Vacuum(services.postgres.url, urlsplit(database_url).path.lstrip("/"))
