"""HTTP routes for the owner's credits."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from litestar import get

from ..web.dependencies import CurrentAccount, DbPool
from ..web.guards import ACCOUNT_GUARDS
from ..web.openapi import PARAMETERS, SIGNED_IN, answers
from ..web.paging import Cursor, Page, read_page
from .ledger import Credits, Entry, credits, entries

# A ledger entry's id is a bigint: the shared cursor carries it as the 128-bit number of its id part.
# A cursor the pattern admits may name a larger one; past the last bigint every id is smaller anyway.
BIGINT_MAX = 2**63 - 1


def _entry_key(entry: Entry) -> tuple[datetime, UUID]:
    return entry.created_at, UUID(int=entry.id)


@get("/api/credits", tags=["credits"], guards=ACCOUNT_GUARDS, responses=answers(*SIGNED_IN))
async def get_credits(account: CurrentAccount, pool: DbPool) -> Credits:
    """The balance that can be spent, and the 20 most recent ledger entries."""
    async with pool.acquire() as conn:
        return await credits(conn, account.id)


@get("/api/credits/entries", tags=["credits"], guards=ACCOUNT_GUARDS, responses=answers(*SIGNED_IN, *PARAMETERS))
async def list_entries(account: CurrentAccount, pool: DbPool, cursor: Cursor = None) -> Page[Entry]:
    """The signed-in account's ledger entries, newest first, 20 a page."""

    async def fetch(conn, after: tuple[datetime, UUID] | None, limit: int) -> list[Entry]:
        key = (after[0], min(after[1].int, BIGINT_MAX)) if after else None
        return await entries(conn, account.id, key, limit)

    return await read_page(pool, cursor, fetch, key=_entry_key)
