"""Signed-in accounts of a live site, each with one uploaded text input, over real HTTP.

One ``httpx.AsyncClient`` per account holds its session cookie; every
request carries the site's Origin, as a browser's would.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass

import asyncpg
import httpx

from harness import mailbox
from harness.proxy import tls_verify
from harness.state import SiteRecord

from .measure import BenchError

PASSWORD = "bench password 1"
# Enough for every task a bench run can submit on a priced site.
CREDITS = 10_000_000


def input_text(index: int) -> bytes:
    """A small text with what the processor changes: CRLF and CR line ends, trailing blanks, non-ASCII."""
    lines = [f"line {n} of input {index} — naïve café  \t" for n in range(12)]
    return ("\r\n".join(lines[:6]) + "\r" + "\r".join(lines[6:]) + "  \r\n").encode()


def normalized(data: bytes) -> bytes:
    """What text-normalize@1 with trimming makes of ``data`` (to check results)."""
    text = data.decode().replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip(" \t") for line in text.split("\n")).encode()


def site_policy(site: SiteRecord) -> dict:
    return site.policy()


def task_price(site: SiteRecord) -> int:
    """What a text-normalize@1 task costs; 0 on a site that does not charge (or predates charges)."""
    charges = site_policy(site).get("charges", {})
    return int(charges["prices"].get("text-normalize@1", 0)) if charges.get("enabled") else 0


def submit_body(file_id: str, request_key: str | None = None) -> dict:
    """The JSON a bench submit sends (the naive site takes the same body)."""
    return {
        "requestKey": request_key or str(uuid.uuid4()),
        "processor": "text-normalize",
        "fileId": file_id,
        "params": {"trimTrailingWhitespace": True},
    }


@dataclass
class Account:
    site: SiteRecord
    http: httpx.AsyncClient
    id: str
    file_id: str
    data: bytes

    async def submit(self, request_key: str | None = None) -> httpx.Response:
        return await self.http.post("/api/tasks", json=submit_body(self.file_id, request_key))

    async def close(self) -> None:
        await self.http.aclose()

    async def reconnect(self) -> None:
        """Drop the kept-alive connections, keep the session: the next request connects anew (with
        several web processes on one port, the kernel then picks the process anew)."""
        fresh = site_client(self.site)
        fresh.cookies = self.http.cookies
        await self.http.aclose()
        self.http = fresh


def site_client(site: SiteRecord) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=site.base_url, headers={"Origin": site.origin}, timeout=60,
                             verify=tls_verify(site))


async def open_account(site: SiteRecord, index: int) -> Account:
    """Register a fresh account, fund it on a priced site, and upload its input."""
    http = site_client(site)
    try:
        email = f"bench-{index}-{secrets.token_hex(4)}@example.com"
        account_id = await register_funded(http, site, email, PASSWORD)
        data = input_text(index)
        file_id = await upload_text(http, site, f"input-{index}.txt", data)
    except BaseException:
        await http.aclose()
        raise
    return Account(site=site, http=http, id=account_id, file_id=file_id, data=data)


async def register_funded(http: httpx.AsyncClient, site: SiteRecord, email: str, password: str, *,
                          error: type[Exception] = BenchError) -> str:
    """Register ``email`` (signed in on ``http``), follow its mailed link where the site asks for a
    proven address, fund it on a priced site, and return its id; a refusal raises ``error``."""
    registered = await http.post("/api/auth/register", json={"email": email, "password": password})
    if registered.status_code != 201:
        raise error(f"{site.slug}: register answered {registered.status_code}: {registered.text[:200]}")
    account_id = registered.json()["id"]
    if mailbox.asks_verified(site):
        try:
            token = await mailbox.await_verification_token(site, email)
        except mailbox.MailMissing as missing:
            raise error(f"{site.slug}: {missing}") from None
        confirmed = await http.post("/api/auth/verify/confirm", json={"token": token})
        if confirmed.status_code != 204:
            raise error(f"{site.slug}: the mailed link answered {confirmed.status_code}: {confirmed.text[:200]}")
    if task_price(site):
        await grant_credits(site, account_id)
    return account_id


async def upload_text(http: httpx.AsyncClient, site: SiteRecord, name: str, data: bytes, *,
                      error: type[Exception] = BenchError) -> str:
    """Upload ``data`` as a text file named ``name`` and return its id; a refusal raises ``error``."""
    uploaded = await http.post("/api/files", params={"name": name}, content=data,
                               headers={"Content-Type": "text/plain"})
    if uploaded.status_code != 201:
        raise error(f"{site.slug}: upload answered {uploaded.status_code}: {uploaded.text[:200]}")
    return uploaded.json()["id"]


async def grant_credits(site: SiteRecord, account_id: str) -> None:
    """As an operator's ``grant-credits`` would: a balance and its ledger line, in one statement."""
    conn = await asyncpg.connect(site.database_url)
    try:
        await conn.execute(
            "WITH funded AS (INSERT INTO credit_account (account_id, balance) VALUES ($1, $2)) "
            "INSERT INTO credit_ledger (account_id, kind, amount, reason) VALUES ($1, 'grant', $2, 'bench')",
            uuid.UUID(account_id), CREDITS,
        )
    finally:
        await conn.close()
