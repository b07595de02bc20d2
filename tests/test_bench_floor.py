"""harness/bench/floor.py against a real PostgreSQL holding a site's schema (the template's migrations):
each pgbench script makes the tasks it says it makes, the server's CPU a task is read for each, and
nothing of the floor's is left afterwards."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from harness import KIT_ROOT
from harness.bench import floor
from harness.bench.measure import BenchError
from harness.services import embedded, with_database

DATABASE = "floor_site"
MIGRATIONS = KIT_ROOT / "template" / "{{slug}}" / "migrations"
INPUT = b"line one  \r\nline two\t\r"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    pg = embedded().start_postgres(tmp_path_factory.mktemp("floor"))
    try:
        yield pg.url, pg.pid
    finally:
        embedded().stop_postgres(pg.pid)
        embedded().remove_state(Path(pg.data_dir))


async def _site_database(url: str) -> floor.Subject:
    """The template's schema, one account and its ready text input, as the site's own statements leave them."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f"CREATE DATABASE {DATABASE}")
    finally:
        await conn.close()
    site = await asyncpg.connect(with_database(url, DATABASE))
    try:
        for migration in sorted(MIGRATIONS.glob("*.sql")):
            await site.execute(migration.read_text())
        owner = await site.fetchval(
            "INSERT INTO account (email, password_hash) VALUES ('floor@example.com', 'x') RETURNING id")
        file = uuid.uuid4()
        await site.execute(
            "INSERT INTO file (id, owner_id, name, content_type, size, sha256, status, object_key, ready_at,"
            " expires_at, kind) VALUES ($1, $2, 'input.txt', 'text/plain', $3, $4, 'ready', $5, now(),"
            " now() + interval '1 day', 'upload')",
            file, owner, len(INPUT), hashlib.sha256(INPUT).digest(), f"p/{owner}/{file}")
        await site.execute("INSERT INTO storage_usage (account_id, used_bytes) VALUES ($1, $2)", owner, len(INPUT))
    finally:
        await site.close()
    return floor.Subject(owner=owner, file=file, size=len(INPUT), prefix="p")


async def _tasks(url: str) -> dict[str, int]:
    site = await asyncpg.connect(with_database(url, DATABASE))
    try:
        return dict(await site.fetchrow(
            "SELECT count(*) AS tasks,"
            " count(*) FILTER (WHERE t.status = 'succeeded' AND r.status = 'ready') AS succeeded,"
            " (SELECT count(*) FROM task_attempt WHERE outcome = 'succeeded') AS attempts,"
            " (SELECT count(*) FROM task_input_pin) AS pins,"
            " (SELECT count(*) FROM pg_namespace WHERE nspname = $1) AS scratch_schemas"
            " FROM task t LEFT JOIN file r ON r.id = t.result_file_id", floor.SCHEMA))
    finally:
        await site.close()


def test_each_script_makes_its_tasks_and_each_run_is_read_on_the_server(server: tuple[str, int],
                                                                           tmp_path: Path) -> None:
    url, pid = server
    subject = asyncio.run(_site_database(url))
    measured = asyncio.run(floor.measure(url, pid, DATABASE, subject, site="floor", rounds=2, seconds=1, clients=1,
                                         scripts_dir=tmp_path / "scripts"))

    # Every script ran in both rounds, in alternating order, and each run's CPU was read on the server.
    assert [(r.round, r.script) for r in measured.runs] == [
        *((1, name) for name in floor.SCRIPTS), *((2, name) for name in reversed(floor.SCRIPTS))]
    assert all(r.tasks > 0 and r.ms_per_task > 0 for r in measured.runs), measured.runs
    # The site's tables hold exactly what `rows` and `calls` made — each task succeeded with a ready result,
    # its attempt ended, its pin gone — and the copies (with `bare`'s and `naive`'s rows) are dropped.
    made = sum(r.tasks for r in measured.runs if r.script in ("rows", "calls"))
    assert asyncio.run(_tasks(url)) == {"tasks": made, "succeeded": made, "attempts": made, "pins": 0,
                                        "scratch_schemas": 0}
    assert sorted(p.name for p in (tmp_path / "scripts").iterdir()) == sorted(f"{n}.sql" for n in floor.SCRIPTS)


def test_a_script_for_an_empty_input_is_refused() -> None:
    # the publication writes a result one byte smaller than the input
    with pytest.raises(BenchError, match="must not be empty"):
        floor.script("calls", floor.Subject(owner=uuid.uuid4(), file=uuid.uuid4(), size=0, prefix="p"))
