"""harness/bench/s3_overlap.py against a real SeaweedFS (the embedded one): a batch makes its pairs
with the number in flight it was given, the server's CPU is read from its process, and nothing of the
batch is left in the bucket."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.bench import s3_overlap
from harness.bench.measure import BenchError
from harness.bench.s3_overlap import Overlap
from harness.services import embedded, s3_client
from harness.state import S3Record

BUCKET = "overlap-test"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Record]:
    s3 = embedded().start_s3(tmp_path_factory.mktemp("overlap"))
    record = S3Record(kind="s3", url=s3.url, pid=s3.pid, access_key_id=s3.access_key_id,
                      secret_access_key=s3.secret_access_key)
    try:
        asyncio.run(_create_bucket(record))
        yield record
    finally:
        embedded().stop_s3(s3.pid)
        embedded().remove_state(Path(s3.data_dir))


async def _create_bucket(s3: S3Record) -> None:
    async with s3_client(s3) as client:
        await client.create_bucket(Bucket=BUCKET)


async def _keys(s3: S3Record) -> list[str]:
    async with s3_client(s3) as client:
        listed = await client.list_objects_v2(Bucket=BUCKET)
        return [item["Key"] for item in listed.get("Contents", [])]


def test_a_batch_makes_its_pairs_counts_the_server_and_leaves_nothing(server: S3Record,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []
    in_flight = 0
    most = 0
    real = s3_overlap._pairs

    async def counted(client, *args) -> None:
        # The calls the batch makes, and how many overlap: counted on the client the batch hands out.
        def wrap(name: str, call):
            async def made(**kwargs):
                nonlocal in_flight, most
                calls.append((name, kwargs["Key"]))
                in_flight += 1
                most = max(most, in_flight)
                try:
                    return await call(**kwargs)
                finally:
                    in_flight -= 1
            return made

        class Client:
            get_object = staticmethod(wrap("GET", client.get_object))
            put_object = staticmethod(wrap("PUT", client.put_object))

        await real(Client, *args)

    monkeypatch.setattr(s3_overlap, "_pairs", counted)
    row = asyncio.run(s3_overlap.measure({"s3": {server.pid}}, server, "run", BUCKET, "p/q", 24, 3))
    assert (row.key, row.in_flight, row.pairs, row.proxy_ms) == ("run", 3, 24, None)
    assert row.server_ms > 0 and row.pairs_per_s > 0
    assert [name for name, _ in calls].count("GET") == 24
    puts = {key for name, key in calls if name == "PUT"}
    assert len(puts) == 24 and all(key.startswith("p/q/") for key in puts)  # a new key every pair
    assert most == 3
    assert asyncio.run(_keys(server)) == []


def test_without_the_server_process_it_refuses(server: S3Record) -> None:
    with pytest.raises(BenchError, match="embedded SeaweedFS"):
        asyncio.run(s3_overlap.measure({"s3 proxy": {server.pid}}, server, "run", BUCKET, "p", 1, 1))


def test_the_table_gives_each_batch_kind_its_median_and_range() -> None:
    rows = [Overlap("site", 1, 10, 140.0, 3.6, 0.4), Overlap("site", 1, 10, 142.0, 3.8, 0.5),
            Overlap("site", 1, 10, 150.0, 3.7, 0.45), Overlap("run", 8, 10, 290.0, 2.1, None)]
    lines = s3_overlap.table(rows).splitlines()
    assert lines[2] == "| 1 | site | 3 | 142.0 | 3.70 (3.60-3.80) | 0.45 (0.40-0.50) |"
    assert lines[3] == "| 8 | run | 1 | 290.0 | 2.10 | - |"


def test_the_probe_without_a_run_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        s3_overlap.main(["--state", str(tmp_path)])
    assert exited.value.code == 2
    assert "no harness state here (run `up` first)" in capsys.readouterr().err
