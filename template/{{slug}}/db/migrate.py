"""The migration runner: ordered, append-only ``migrations/NNNN_name.sql`` files.

Guarantees:
- two runners never race: both take the same session advisory lock first;
- each file is applied in its own transaction together with its
  ``schema_migrations`` row, so a failure leaves no half-applied file;
- an applied file whose bytes changed, or that disappeared, stops the runner
  before anything new is applied (history is append-only).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

import asyncpg

# The site package's own migrations/ folder (this module lives in <pkg>/db/).
MIGRATIONS = resources.files(__package__.rpartition(".")[0]).joinpath("migrations")

# Any constant shared by every runner of this site's database works; this one
# spells "sitekit" so it is recognisable in pg_locks.
MIGRATION_LOCK_KEY = 0x73697465_6B6974
_FILENAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    checksum    text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""


class MigrationError(Exception):
    """The migration files and the database disagree; the message says how."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()

    @property
    def filename(self) -> str:
        return f"{self.version:04d}_{self.name}.sql"


def discover(folder: Traversable = MIGRATIONS) -> list[Migration]:
    found: list[Migration] = []
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        match = _FILENAME.match(entry.name)
        if not match:
            raise MigrationError(f"{entry.name}: migration files are named NNNN_name.sql")
        found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise MigrationError(f"{migration.filename}: expected migration {expected:04d} (no gaps or repeats)")
    return found


async def migrate(conn: asyncpg.Connection, migrations: list[Migration]) -> list[str]:
    """Apply what is pending; return the file names applied now."""
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
    try:
        await conn.execute(CREATE_TABLE)
        applied = {
            row["version"]: row
            for row in await conn.fetch("SELECT version, name, checksum FROM schema_migrations")
        }
        known = {m.version: m for m in migrations}
        for version, row in sorted(applied.items()):
            migration = known.get(version)
            if migration is None:
                raise MigrationError(
                    f"{version:04d}_{row['name']}.sql is applied in the database but missing on disk"
                )
            if migration.checksum != row["checksum"]:
                raise MigrationError(
                    f"{migration.filename} was edited after it was applied; "
                    "add a new migration instead of changing an applied one"
                )
        done: list[str] = []
        for migration in migrations:
            if migration.version in applied:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            done.append(migration.filename)
        return done
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK_KEY)


async def migrate_database(dsn: str, folder: Traversable = MIGRATIONS) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        return await migrate(conn, discover(folder))
    finally:
        await conn.close()
