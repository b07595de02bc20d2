"""The asyncpg pool and the one transaction helper every module uses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

# Every connection answers in UTC and gives up on a statement or a lock wait
# instead of hanging a request forever.
SERVER_SETTINGS = {
    "timezone": "UTC",
    "statement_timeout": "15s",
    "lock_timeout": "10s",
    "idle_in_transaction_session_timeout": "60s",
}


# The database is busy, slow or out of reach right now — the request itself is fine and may be
# sent again as it is: a lock or statement timeout (lock_timeout / statement_timeout above), a
# connection the server ended or refused, no connection slot, the client side of a lost
# connection, a socket error or timeout while connecting or acquiring (ACQUIRE_TIMEOUT below). Requests answer these
# with 503 UNAVAILABLE (web/errors.py); work that already committed logs them and leaves the
# rest to maintenance (tasks/delivery.py, files/deletion.py).
UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.exceptions.LockNotAvailableError,
    asyncpg.exceptions.OperatorInterventionError,  # query canceled, admin/crash shutdown, cannot connect now
    asyncpg.exceptions.PostgresConnectionError,  # connection does not exist, failed, rejected
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.InterfaceError,
    # A connection the server dropped mid-statement (its postmaster killed) that asyncpg has not marked
    # closed yet: the next statement on it is refused with "cannot switch to state …; another operation
    # is in progress" (tests/test_database_crash.py).
    asyncpg.exceptions.InternalClientError,
    OSError,
    TimeoutError,
)


# How long a request waits for a pooled connection before it answers 503 UNAVAILABLE: when
# every connection is held (a lock wait, a slow statement, a flood), queueing without end
# would stall every request of the process behind them; shorter than lock_timeout, so a
# full pool is reported before the waits that fill it end.
ACQUIRE_TIMEOUT = 5.0


class Pool(asyncpg.Pool):
    """asyncpg's pool whose ``acquire`` gives up after ``ACQUIRE_TIMEOUT`` unless told otherwise."""

    def acquire(self, *, timeout: float | None = ACQUIRE_TIMEOUT):
        return super().acquire(timeout=timeout)


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Release a connection to the pool without asyncpg's reset query.

    asyncpg still rolls back a transaction left open (and drops listeners)
    before calling this. Its reset query — unlock advisory locks, close
    cursors, UNLISTEN, RESET ALL — would undo session state that no pooled
    connection here makes: settings come with the connection (SERVER_SETTINGS),
    cursors live inside transactions, and the migration lock is taken on a
    connection of its own. Skipping it saves one round trip and one
    transaction on every release, about nine per task (docs/benchmarks.md).
    """


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10,
                      server_settings: dict[str, str] = SERVER_SETTINGS) -> Pool:
    # asyncpg.create_pool takes no pool class; these are its own defaults for the rest.
    return await Pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        max_queries=50000,
        max_inactive_connection_lifetime=300.0,
        loop=None,
        connection_class=asyncpg.Connection,
        record_class=asyncpg.Record,
        server_settings=server_settings,
        init=_init_connection,
        reset=_keep_session,
        command_timeout=30,
    )


async def connect(dsn: str) -> asyncpg.Connection:
    """One connection configured exactly like the pool's (for tools and tests)."""
    conn = await asyncpg.connect(dsn, server_settings=SERVER_SETTINGS, command_timeout=30)
    await _init_connection(conn)
    return conn


@asynccontextmanager
async def transaction(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    """A connection inside one READ COMMITTED transaction; commits on success, rolls back on error."""
    async with pool.acquire() as conn, conn.transaction():
        yield conn
