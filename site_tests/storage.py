"""Looking behind a site's storage: the S3 API directly, with the run's credentials."""

from __future__ import annotations

import boto3
from botocore.config import Config

from harness.state import SitesFile


def s3(run: SitesFile):
    record = run.services.s3
    return boto3.client(
        "s3",
        endpoint_url=record.url,
        region_name=record.region,
        aws_access_key_id=record.access_key_id,
        aws_secret_access_key=record.secret_access_key,
        config=Config(s3={"addressing_style": "path"}),
    )


def keys(run: SitesFile, bucket: str) -> list[str]:
    client = s3(run)
    found: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        found += [item["Key"] for item in page.get("Contents", [])]
    return found
