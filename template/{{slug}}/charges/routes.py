"""HTTP route for the owner's credits."""

from __future__ import annotations

from litestar import get

from ..web.dependencies import CurrentAccount, DbPool
from ..web.guards import ACCOUNT_GUARDS
from ..web.openapi import SIGNED_IN, answers
from .ledger import Credits, credits


@get("/api/credits", tags=["credits"], guards=ACCOUNT_GUARDS, responses=answers(*SIGNED_IN))
async def get_credits(account: CurrentAccount, pool: DbPool) -> Credits:
    """The balance that can be spent, and the 20 most recent ledger entries."""
    async with pool.acquire() as conn:
        return await credits(conn, account.id)
