"""Looking behind a site's storage: the S3 API directly, with the run's credentials."""

from __future__ import annotations

import asyncio

from harness.services import s3_client
from harness.state import SitesFile


async def _keys(run: SitesFile, bucket: str) -> list[str]:
    found: list[str] = []
    async with s3_client(run.services.s3) as client:
        async for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            found += [item["Key"] for item in page.get("Contents", [])]
    return found


def keys(run: SitesFile, bucket: str) -> list[str]:
    """Every object key in ``bucket`` (aiobotocore, the kit's S3 client: boto3 is not a dependency)."""
    return asyncio.run(_keys(run, bucket))
