"""The S3 server's CPU for a task's object calls, by how many tasks' calls are in flight at once.

    python -m harness.bench.s3_overlap --state DIR [--pairs 1500] [--in-flight 1 2 4 8] [--rounds 2]

A task's object calls are one GET of its input and one PUT of its result under a new key: the
kit's sites and the naive site make the same two (docs/benchmarks.md counts them with SeaweedFS's
own counter). Against a run's storage (``harness up``), through the first site's endpoint, with the
site's own key and with the run's key in turn: the CPU the S3 server, and the site's S3 proxy, spend
a pair at each number in flight. It answers whether a site's S3 CPU a task is set by its calls or by
how many of them overlap. What it writes is deleted afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path

import msgspec

from harness import state
from harness.services import s3_client
from harness.state import S3Record, SitesFile

from . import cpu, rounds, tables
from .measure import BenchError

INPUT = b"line one  \r\nline two\t\r\n" * 30  # about the size of the bench's inputs and results


class Overlap(msgspec.Struct, frozen=True):
    key: str  # whose key signed the calls: "site" or "run"
    in_flight: int
    pairs: int
    pairs_per_s: float
    server_ms: float  # the S3 server's CPU a pair
    proxy_ms: float | None  # the site's S3 proxy's, where it has one


async def _pairs(client, bucket: str, source: str, prefix: str, count: int, in_flight: int,
                 made: list[str]) -> None:
    """``count`` pairs with ``in_flight`` at once: GET ``source``, PUT its bytes under a new key (into
    ``made``)."""
    numbers = iter(range(count))

    async def caller() -> None:
        for _ in numbers:
            response = await client.get_object(Bucket=bucket, Key=source)
            async with response["Body"] as body:
                data = await body.read()
            key = f"{prefix}/{uuid.uuid4()}"
            made.append(key)
            await client.put_object(Bucket=bucket, Key=key, Body=data, ContentLength=len(data),
                                    ContentType="text/plain")

    async with asyncio.TaskGroup() as callers:
        for _ in range(in_flight):
            callers.create_task(caller())


async def measure(groups: cpu.Groups, s3: S3Record, key: str, bucket: str, prefix: str, count: int,
                  in_flight: int) -> Overlap:
    """One batch of ``count`` pairs; ``groups`` holds "s3" (and "s3 proxy" where there is one). Its
    objects are deleted after the batch's CPU is read."""
    if "s3" not in groups:
        raise BenchError("the S3 server's CPU is read from its process: use the run's embedded SeaweedFS")
    made: list[str] = []
    async with s3_client(s3) as client:
        source = f"{prefix}/input"
        await client.put_object(Bucket=bucket, Key=source, Body=INPUT, ContentType="text/plain")
        try:
            before = cpu.reading(groups)
            began = time.perf_counter()
            await _pairs(client, bucket, source, prefix, count, in_flight, made)
            seconds = time.perf_counter() - began
            after = cpu.reading(groups)
        finally:
            for name in [source, *made]:
                await client.delete_object(Bucket=bucket, Key=name)

    def per_pair(group: str) -> float:
        return round(1000 * (after[group] - before[group]) / count, 3)

    return Overlap(key=key, in_flight=in_flight, pairs=count, pairs_per_s=round(count / seconds, 1),
                   server_ms=per_pair("s3"), proxy_ms=per_pair("s3 proxy") if "s3 proxy" in groups else None)


def table(rows: list[Overlap]) -> str:
    """Each number in flight and key once, in Markdown: the median of its rounds, and their range."""
    batches: dict[tuple[int, str], list[Overlap]] = {}
    for row in rows:
        batches.setdefault((row.in_flight, row.key), []).append(row)
    return tables.table(
        ["in flight", "key", "rounds", "pairs/s", "S3 server ms a pair", "S3 proxy ms a pair"],
        [[in_flight, key, len(batch), rounds.spread(r.pairs_per_s for r in batch).median,
          tables.spread_cell(rounds.spread(r.server_ms for r in batch)),
          tables.spread_cell(rounds.spread(r.proxy_ms for r in batch))]
         for (in_flight, key), batch in sorted(batches.items())],
        markdown=True)


async def run(state_dir: Path, sites: SitesFile, pairs: int, in_flight: list[int], repeats: int) -> list[Overlap]:
    site = sites.sites[0]
    run_key = msgspec.structs.replace(sites.services.s3, url=site.s3_endpoint_url)
    env = state.load_site_env(state_dir, site.slug)
    site_key = msgspec.structs.replace(run_key, access_key_id=env["S3_ACCESS_KEY_ID"],
                                       secret_access_key=env["S3_SECRET_ACCESS_KEY"])
    groups = {name: pids for name, pids in cpu.service_groups(sites, site).items() if name in ("s3", "s3 proxy")}
    prefix = f"{site.object_prefix}/bench-s3-overlap-{uuid.uuid4().hex[:8]}"
    keys = [("site", site_key), ("run", run_key)]
    rows = []
    for number in range(repeats):
        for name, key in keys if number % 2 == 0 else keys[::-1]:
            for n in in_flight:
                rows.append(await measure(groups, key, name, site.bucket, prefix, pairs, n))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.s3_overlap")
    parser.add_argument("--state", type=state.run_folder, required=True,
                        help="a run's state folder (harness up)")
    parser.add_argument("--pairs", type=int, default=1500, help="GET+PUT pairs a batch")
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=2, help="each key and number in flight, interleaved")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.rounds < 1 or min(args.in_flight) < 1:
        parser.error("--pairs, --rounds and --in-flight must be at least 1")
    sites = state.load(args.state)
    print(table(asyncio.run(run(args.state, sites, args.pairs, args.in_flight, args.rounds))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
