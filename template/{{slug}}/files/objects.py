"""Object storage for files: one S3 bucket per site, private keys ``<prefix>/<account>/<file>``.

Every call is bounded by ``OBJECT_TIMEOUT`` and every provider failure becomes
``StorageUnavailable`` (or ``ObjectMissing``); the provider's own message is
never passed on or logged, only the exception's type. Each failure is counted
(``sitekit_storage_errors_total``) through the store's ``on_failure``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime
from typing import IO, Any
from uuid import UUID

from botocore.exceptions import BotoCoreError, ClientError

from ..services.storage import OBJECT_TIMEOUT, PROBE_TIMEOUT, open_storage
from ..settings import Settings
from .errors import StorageUnavailable

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
_MISSING_CODES = {"NoSuchKey", "404", "NotFound"}


class ObjectMissing(Exception):
    """The key does not exist (a real answer from storage, not an outage)."""


class StreamDeadline(Exception):
    """A download was still going at its deadline; the response is cut short (the client sees fewer
    bytes than Content-Length), because its S3 connection was already given back."""


FailureCounter = Callable[[], Awaitable[None]]


async def _not_counted() -> None:
    pass


@asynccontextmanager
async def _storage_call(what: str, on_failure: FailureCounter) -> AsyncIterator[None]:
    try:
        async with asyncio.timeout(OBJECT_TIMEOUT):
            yield
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in _MISSING_CODES:
            raise ObjectMissing() from None
        log.warning("storage %s failed: %s %s", what, type(error).__name__, code[:40])
        await on_failure()
        raise StorageUnavailable() from None
    except (BotoCoreError, OSError, TimeoutError) as error:
        log.warning("storage %s failed: %s", what, type(error).__name__)
        await on_failure()
        raise StorageUnavailable() from None


class ObjectStore:
    def __init__(self, client: Any, bucket: str, prefix: str, on_failure: FailureCounter = _not_counted) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix
        self.on_failure = on_failure

    def key_for(self, owner_id: UUID, file_id: UUID) -> str:
        # task_claim (migration 0014) builds a result's key the same way, from this prefix.
        return f"{self.prefix}/{owner_id}/{file_id}"

    async def put(self, key: str, body: bytes | IO[bytes], size: int, content_type: str) -> None:
        async with _storage_call("put", self.on_failure):
            await self.client.put_object(
                Bucket=self.bucket, Key=key, Body=body, ContentLength=size, ContentType=content_type
            )

    async def read(self, key: str, limit: int | None = None) -> bytes:
        """The object's bytes, or its first ``limit`` bytes."""
        extra = {"Range": f"bytes=0-{limit - 1}"} if limit else {}
        async with _storage_call("read", self.on_failure):
            response = await self.client.get_object(Bucket=self.bucket, Key=key, **extra)
            async with response["Body"] as body:
                return await body.read()

    async def stream(self, key: str, seconds: float) -> AsyncIterator[bytes]:
        """Open the object and yield its bytes in chunks, for at most ``seconds``; errors before the
        first byte raise here."""
        async with _storage_call("open", self.on_failure):
            response = await self.client.get_object(Bucket=self.bucket, Key=key)
        body = response["Body"]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        # A client that stops reading parks this generator at its yield for as long as it likes,
        # and with it one of the process's S3 connections: at the deadline the body is closed
        # whatever the generator waits for, which gives the connection back.
        watchdog = loop.call_at(deadline, body.close)

        async def unless_late() -> None:  # the watchdog's close is no storage failure
            if loop.time() < deadline:
                await self.on_failure()

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async with body:
                    while True:
                        try:
                            async with _storage_call("read", unless_late):
                                chunk = await body.read(CHUNK)
                        except StorageUnavailable:
                            if loop.time() >= deadline:  # the watchdog closed it under the read
                                raise StreamDeadline() from None
                            raise
                        if not chunk:
                            return  # complete, however late
                        if loop.time() >= deadline:
                            raise StreamDeadline()
                        yield chunk
            finally:
                watchdog.cancel()

        return chunks()

    async def reachable(self) -> bool:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                await self.client.head_bucket(Bucket=self.bucket)
        except Exception:
            return False
        return True

    async def delete(self, key: str) -> None:
        """Delete the key; deleting a missing key succeeds (S3 semantics)."""
        async with _storage_call("delete", self.on_failure):
            await self.client.delete_object(Bucket=self.bucket, Key=key)

    async def exists(self, key: str) -> bool:
        try:
            async with _storage_call("head", self.on_failure):
                await self.client.head_object(Bucket=self.bucket, Key=key)
        except ObjectMissing:
            return False
        return True

    async def list_pages(self) -> AsyncIterator[list[tuple[str, datetime]]]:
        """Every key under this site's prefix with its last-modified time, a listing page at a time."""
        pages = aiter(self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{self.prefix}/", PaginationConfig={"PageSize": 1000}
        ))
        while True:
            async with _storage_call("list", self.on_failure):
                page = await anext(pages, None)
            if page is None:
                return
            yield [(item["Key"], item["LastModified"]) for item in page.get("Contents", [])]

    async def keys_after(self, after: str | None, limit: int) -> list[tuple[str, datetime]]:
        """The first ``limit`` keys under this site's prefix that come after ``after`` (from the first
        key when None), in key order, with their last-modified times; fewer at the end of the bucket."""
        found: list[tuple[str, datetime]] = []
        listing: dict[str, Any] = {"Bucket": self.bucket, "Prefix": f"{self.prefix}/"}
        if after is not None:
            listing["StartAfter"] = after
        while len(found) < limit:
            async with _storage_call("list", self.on_failure):
                page = await self.client.list_objects_v2(**listing, MaxKeys=min(limit - len(found), 1000))
            found += [(item["Key"], item["LastModified"]) for item in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                break
            listing["ContinuationToken"] = page["NextContinuationToken"]
        return found


async def open_object_store(settings: Settings, stack: AsyncExitStack,
                            on_failure: FailureCounter = _not_counted) -> ObjectStore | None:
    """The site's bucket and prefix on its S3 client (closed with ``stack``); None without S3_ENDPOINT_URL."""
    client = await open_storage(settings, stack)
    if client is None:
        return None
    return ObjectStore(client, settings.site.bucket, settings.site.object_prefix, on_failure)
