"""HTTP route for the owner's credits."""

from __future__ import annotations

from litestar import get

from ..web.dependencies import CurrentAccount, SiteRuntime
from .ledger import Credits, credits


@get("/api/credits", tags=["credits"])
async def get_credits(account: CurrentAccount, runtime: SiteRuntime) -> Credits:
    """The balance that can be spent, and the 20 most recent ledger entries."""
    async with runtime.pool.acquire() as conn:
        return await credits(conn, account.id)
