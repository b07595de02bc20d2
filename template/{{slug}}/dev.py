"""``dev``: the whole site on one machine with embedded services, until Ctrl-C.

Each service without a URL in the environment is started embedded under the
state folder, where its data survives restarts: PostgreSQL's data directory,
Valkey's append-only file, and SeaweedFS's volumes and file index (with the
S3 keys made for it on first use); without SMTP_URL, mail goes to an SMTP sink on
loopback whose mailbox the page /dev/mail lists (that page exists only in `dev`). Then migrations run, the services are
recorded for the site's other commands (``dev_services``), and the site's
processes start as children. Ctrl-C (SIGINT) or SIGTERM stops exactly what
this command started, by pid.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import asyncpg

from . import dev_services, embedded
from .db.migrate import migrate_database
from .settings import Settings, load_environment

PACKAGE = __package__
WEB_HOST = "127.0.0.1"  # dev serves on loopback only


async def ensure_database(server_url: str, name: str) -> str:
    """Create database ``name`` on the server if missing; return its URL."""
    conn = await asyncpg.connect(server_url)
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            # DDL takes no parameters: the identifier is quoted by the server's own quote_ident
            await conn.execute(f"CREATE DATABASE {await conn.fetchval('SELECT quote_ident($1::text)', name)}")
    finally:
        await conn.close()
    return server_url.rsplit("/", 1)[0] + "/" + name


async def ensure_bucket(env: dict[str, str], bucket: str) -> None:
    from aiobotocore.session import get_session

    async with get_session().create_client(
        "s3",
        endpoint_url=env["S3_ENDPOINT_URL"],
        region_name=env.get("S3_REGION", "us-east-1"),
        aws_access_key_id=env["S3_ACCESS_KEY_ID"],
        aws_secret_access_key=env["S3_SECRET_ACCESS_KEY"],
    ) as client:
        existing = {b["Name"] for b in (await client.list_buckets()).get("Buckets", [])}
        if bucket not in existing:
            await client.create_bucket(Bucket=bucket)


def child_commands(port: int) -> dict[str, list[str]]:
    """The site's processes, each a ``python -m <site> ...`` child."""
    python = [sys.executable, "-m", PACKAGE]
    return {
        "web": [*python, "serve", "--host", WEB_HOST, "--port", str(port)],
        "worker": [*python, "worker"],
        "maintain": [*python, "maintain", "--loop", "30"],
    }


class StopOnSignal:
    """SIGINT and SIGTERM stop ``dev`` at whatever it is doing, start-up included, by raising
    KeyboardInterrupt; once the stop has begun (on a signal, or a child's exit) they are ignored,
    so nothing cuts it short and leaves a server running.

    Installed by ``dev`` itself: a process started in the background by a non-interactive shell (CI
    runners, process managers) inherits SIGINT ignored, and Python then raises no KeyboardInterrupt."""

    def __init__(self) -> None:
        self.stopping = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self)

    def __call__(self, signum: int, frame: object) -> None:
        if not self.stopping:
            self.stopping = True
            raise KeyboardInterrupt


def hold_port(host: str, port: int) -> socket.socket:
    """``port`` bound now and held until the web process takes it over. The ports dev's services are
    given are ones the kernel finds free, and until the web process binds its own, that one is
    free too: a service was once given it, and the site's requests reached that service."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        held.bind((host, port))
    except OSError:
        held.close()
        raise dev_services.DevPortInUse(host, port) from None
    return held


def run_dev(settings: Settings, args: argparse.Namespace) -> int:
    stop = StopOnSignal()
    state = dev_services.state_folder(args.state)
    state.mkdir(parents=True, exist_ok=True)
    with dev_services.hold_state(state):
        return _run(settings, args, state, stop)


def _run(settings: Settings, args: argparse.Namespace, state: Path, stop: StopOnSignal) -> int:
    port = args.port or settings.site.port
    held = hold_port(WEB_HOST, port)
    env = dict(os.environ)
    started: list[tuple[str, int]] = []  # (kind, pid), stopped in reverse order

    try:
        if not env.get("DATABASE_URL"):
            pg = embedded.start_postgres(state)
            started.append(("postgres", pg.pid))
            env["DATABASE_URL"] = asyncio.run(ensure_database(pg.url, settings.site.database_name))
        if not env.get("BROKER_URL"):
            valkey = embedded.start_valkey(state)
            started.append(("valkey", valkey.pid))
            env["BROKER_URL"] = valkey.url
        if not env.get("S3_ENDPOINT_URL"):
            s3 = embedded.start_s3(state)
            started.append(("s3", s3.pid))
            env.update(
                S3_ENDPOINT_URL=s3.url,
                S3_ACCESS_KEY_ID=s3.access_key_id,
                S3_SECRET_ACCESS_KEY=s3.secret_access_key,
            )
            asyncio.run(ensure_bucket(env, settings.site.bucket))
        if not env.get("SMTP_URL"):
            # Mail goes to a sink on loopback, never out: its mailbox is listed at /dev/mail.
            sink = embedded.start_smtp_sink(state / "mail")
            started.append(("smtp-sink", sink.pid))
            env.update(SMTP_URL=sink.url, DEV_MAILBOX=sink.mailbox)
        env.setdefault("SECRET_KEY", embedded.secret_file(state / "secret_key", 48))
        if not env.get("APP_ORIGIN") and args.port:
            env["APP_ORIGIN"] = f"http://{WEB_HOST}:{port}"
        load_environment(env)  # refuse a bad environment before anything else starts

        applied = asyncio.run(migrate_database(env["DATABASE_URL"]))
        print(f"migrations: {len(applied)} applied", flush=True)
        dev_services.record(state, env)

        children: dict[str, subprocess.Popen] = {}
        held.close()  # the web process binds it next
        for name, argv in child_commands(port).items():
            children[name] = subprocess.Popen(argv, env=env, start_new_session=True)
            started.append((name, children[name].pid))

        url = env.get("APP_ORIGIN") or settings.origin
        _wait_ready(f"http://{WEB_HOST}:{port}/readyz", children["web"])
        print(f"{settings.site.name} is running at {url}  (Ctrl-C stops it)", flush=True)
        if env.get("DEV_MAILBOX"):
            print(f"mail it sends is listed at {url}/dev/mail", flush=True)

        while True:
            for name, child in children.items():
                if child.poll() is not None:
                    stop.stopping = True
                    print(f"{name} exited with code {child.returncode}; stopping", file=sys.stderr)
                    return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        return 0
    finally:
        held.close()
        stop.stopping = True
        dev_services.forget(state)
        for kind, pid in reversed(started):
            if kind == "postgres":
                embedded.stop_postgres(pid)
            elif kind == "s3":
                embedded.stop_s3(pid)
            else:
                embedded.stop_process(pid)


def _wait_ready(url: str, web: subprocess.Popen) -> None:
    import urllib.request

    def ready() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    embedded.wait_until(ready, 60.0, "web /readyz", web)
