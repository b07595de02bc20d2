"""The S3 client (aiobotocore), one per process, opened and closed by the runtime."""

from __future__ import annotations

from contextlib import AsyncExitStack

from aiobotocore.config import AioConfig
from aiobotocore.session import get_session

from ..settings import Settings

# One place for storage timeouts. Object reads and writes are additionally
# bounded by asyncio.timeout at the call site (15 s, files/objects.py).
CONNECT_TIMEOUT = 5
READ_TIMEOUT = 15
OBJECT_TIMEOUT = 15.0
# The readiness probe (HEAD of the bucket): a frozen server must not hold /readyz or a scrape of
# /metrics past their callers' own timeouts (a balancer's, Prometheus's 10 s).
PROBE_TIMEOUT = 5.0
# S3 connections per process. A download holds one for as long as its client reads (up to
# [files] download_seconds); aiobotocore's default of 10 let ten slow readers stop every
# other storage call of the process.
CONNECTIONS = 64


async def open_storage(settings: Settings, stack: AsyncExitStack):
    """An S3 client, or None when the site has no S3_ENDPOINT_URL."""
    env = settings.env
    if not env.s3_endpoint_url:
        return None
    config = AioConfig(
        connect_timeout=CONNECT_TIMEOUT,
        max_pool_connections=CONNECTIONS,
        read_timeout=READ_TIMEOUT,
        retries={"max_attempts": 2, "mode": "standard"},
        s3={"addressing_style": "path"},
        signature_version="s3v4",
    )
    return await stack.enter_async_context(
        get_session().create_client(
            "s3",
            endpoint_url=env.s3_endpoint_url,
            region_name=env.s3_region,
            aws_access_key_id=env.s3_access_key_id,
            aws_secret_access_key=env.s3_secret_access_key,
            config=config,
        )
    )

