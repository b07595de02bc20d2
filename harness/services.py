"""Backing services for a run: the given URLs, or embedded servers started here.

One PostgreSQL server, one broker and one S3 server serve every site of a
run; isolation comes from a fresh database, broker namespace (and queue
names) and bucket per site, which ``drop_site_resources`` removes again.

External services come from HARNESS_DATABASE_URL (a server URL whose user may
create databases), HARNESS_BROKER_URL (redis://… or amqp://…) and
HARNESS_S3_ENDPOINT_URL with HARNESS_S3_ACCESS_KEY_ID /
HARNESS_S3_SECRET_ACCESS_KEY (and optionally HARNESS_S3_REGION).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from urllib.parse import urlsplit

import asyncpg
import msgspec
from aiobotocore.session import get_session

from . import KIT_ROOT, template_module
from .background import start_logged
from .identifiers import quote_ident
from .state import S3Record, ServiceRecord, Services, SiteRecord

log = logging.getLogger(__name__)


@cache
def embedded() -> ModuleType:
    """The site template's embedded-server module: one implementation for sites and harness."""
    return template_module("{{slug}}/embedded.py", "sitekit_embedded")


class ServiceError(RuntimeError):
    """A service could not be provisioned or reached; the message says which."""


def provision(state_dir: Path, environ: Mapping[str, str] | None = None) -> Services:
    environ = os.environ if environ is None else environ
    folder = Path(state_dir) / "services"
    folder.mkdir(parents=True, exist_ok=True)
    emb = embedded()
    started: list[ServiceRecord] = []
    try:
        if url := environ.get("HARNESS_DATABASE_URL"):
            postgres = ServiceRecord(kind="postgres", url=url)
        else:
            pg = emb.start_postgres(folder / "postgres")
            postgres = ServiceRecord(kind="postgres", url=pg.url, pid=pg.pid, log=pg.log, data_dir=pg.data_dir)
            started.append(postgres)

        if url := environ.get("HARNESS_BROKER_URL"):
            broker = ServiceRecord(kind=broker_kind(url), url=url)
        else:
            vk = emb.start_valkey(folder / "valkey")
            broker = ServiceRecord(kind="redis", url=vk.url, pid=vk.pid, log=vk.log, data_dir=vk.data_dir)
            started.append(broker)

        if url := environ.get("HARNESS_S3_ENDPOINT_URL"):
            s3 = S3Record(
                kind="s3",
                url=url,
                access_key_id=environ.get("HARNESS_S3_ACCESS_KEY_ID", ""),
                secret_access_key=environ.get("HARNESS_S3_SECRET_ACCESS_KEY", ""),
                region=environ.get("HARNESS_S3_REGION", "us-east-1"),
            )
        else:
            server = emb.start_s3(folder / "s3")
            s3 = S3Record(
                kind="s3",
                url=server.url,
                pid=server.pid,
                log=server.log,
                data_dir=server.data_dir,
                access_key_id=server.access_key_id,
                secret_access_key=server.secret_access_key,
            )
            started.append(s3)
    except Exception:
        stop_services_started(started)
        raise
    external = {"HARNESS_DATABASE_URL", "HARNESS_BROKER_URL", "HARNESS_S3_ENDPOINT_URL"} & set(environ)
    mode = "embedded" if not external else ("external" if len(external) == 3 else "mixed")
    return Services(mode=mode, postgres=postgres, broker=broker, s3=s3)


def broker_kind(url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme in ("redis", "rediss"):
        return "redis"
    if scheme in ("amqp", "amqps"):
        return "rabbitmq"
    raise ServiceError(f"HARNESS_BROKER_URL must be redis:// or amqp:// (got scheme {scheme!r})")


def stop_server(record: ServiceRecord, *, kill: bool = False) -> None:
    """Stop the embedded server of ``record`` by its pid: its own way (PostgreSQL's fast shutdown), or
    with ``kill`` SIGKILLed, finishing nothing (PostgreSQL then recovers from its WAL on the next start)."""
    emb = embedded()
    if record.kind == "postgres" and not kill:
        emb.stop_postgres(record.pid)
    elif record.kind == "s3":
        emb.stop_s3(record.pid, signal.SIGKILL if kill else signal.SIGTERM)
    else:
        emb.stop_process(record.pid, signal.SIGKILL if kill else signal.SIGTERM)


def stop_services_started(records: list[ServiceRecord]) -> None:
    for record in reversed(records):
        if record.pid is not None:
            stop_server(record)


def _port(record: ServiceRecord) -> int:
    port = urlsplit(record.url).port
    assert port is not None, record.url
    return port


# A SIGKILLed postmaster leaves its backends running until they notice; until they are gone the
# shared memory is in use and a new postmaster on the same data refuses to start.
RESTART_DEADLINE = 60.0


def start_again(state_dir: Path, record: ServiceRecord, *, empty: bool = False) -> ServiceRecord:
    """The embedded server of ``record``, stopped or dead, started again on its own data, port and
    credentials (the passwords, Valkey's users file and SeaweedFS's identities live with the data, as
    ``provision`` and privilege.py left them). ``empty``: the broker starts without the messages it held
    (its append-only file removed; its users kept). Returns the record with the new pid."""
    emb = embedded()
    folder = Path(state_dir) / "services"
    port = _port(record)
    if record.kind == "postgres":
        deadline = time.monotonic() + RESTART_DEADLINE
        while True:
            try:
                server = emb.start_postgres(folder / "postgres", port=port)
                break
            except emb.EmbeddedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    elif record.kind == "s3":
        server = emb.start_s3(folder / "s3", port=port)
    else:
        if empty:
            shutil.rmtree(Path(record.data_dir) / "appendonlydir", ignore_errors=True)
            (Path(record.data_dir) / "dump.rdb").unlink(missing_ok=True)
        server = emb.start_valkey(folder / "valkey", port=port)
    return msgspec.structs.replace(record, pid=server.pid)


def stop_services(services: Services) -> None:
    """Stop the servers this harness started (by pid); external ones are left alone."""
    stop_services_started([services.postgres, services.broker, services.s3, *services.s3_proxies.values(),
                           *services.smtp_sinks.values()])


FAULT_PROXY = KIT_ROOT / "template" / "tests" / "faults.py"


def start_fault_proxy(upstream_url: str, folder: Path) -> ServiceRecord:
    """A TCP proxy in front of ``upstream_url`` that breaks on SIGUSR1 and heals on SIGUSR2."""
    parts = urlsplit(upstream_url)
    port_file = folder / "s3-proxy.port"
    port_file.unlink(missing_ok=True)
    log_path = folder / "logs" / "s3-proxy.log"
    process = start_logged([sys.executable, str(FAULT_PROXY), "--upstream", f"{parts.hostname}:{parts.port or 80}",
                            "--port-file", str(port_file)], log_path)
    embedded().wait_until(port_file.exists, 30.0, "s3 fault proxy", process)
    url = f"{parts.scheme}://127.0.0.1:{port_file.read_text().strip()}"
    return ServiceRecord(kind="s3-proxy", url=url, pid=process.pid, log=str(log_path), data_dir=str(folder))


def start_smtp_sink(folder: Path, python: str) -> tuple[ServiceRecord, str] | None:
    """The site's own SMTP sink on loopback (the template's mail/sink.py, run with the site's ``python``,
    which has aiosmtpd): its record and mailbox, or None for a site whose environment cannot run it
    (one rendered from a template older than mail)."""
    try:
        sink = embedded().start_smtp_sink(folder / "mail", python=python)
    except Exception as error:
        log.warning("no SMTP sink for %s: %s", folder.name, type(error).__name__)
        return None
    record = ServiceRecord(kind="smtp-sink", url=sink.url, pid=sink.pid, log=sink.log, data_dir=sink.data_dir)
    return record, sink.mailbox


def with_database(server_url: str, name: str) -> str:
    parts = urlsplit(server_url)
    return parts._replace(path="/" + name).geturl()


# --- per-site resources ---------------------------------------------------------


def s3_client(s3: S3Record):
    return get_session().create_client(
        "s3",
        endpoint_url=s3.url,
        region_name=s3.region,
        aws_access_key_id=s3.access_key_id,
        aws_secret_access_key=s3.secret_access_key,
    )


async def execute_on_server(server_url: str, statement: str) -> None:
    """One statement on its own connection, outside a transaction (CREATE/DROP DATABASE, DROP ROLE)."""
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def create_database(server_url: str, name: str) -> None:
    await execute_on_server(server_url, f"CREATE DATABASE {quote_ident(name)}")


async def drop_database(server_url: str, name: str) -> None:
    await execute_on_server(server_url, f"DROP DATABASE IF EXISTS {quote_ident(name)} WITH (FORCE)")


async def _create_site_resources(services: Services, database: str, bucket: str) -> None:
    await create_database(services.postgres.url, database)
    async with s3_client(services.s3) as client:
        await client.create_bucket(Bucket=bucket)


def create_site_resources(services: Services, database: str, bucket: str) -> str:
    """Create the site's database and bucket; return the site's DATABASE_URL."""
    asyncio.run(_create_site_resources(services, database, bucket))
    return with_database(services.postgres.url, database)


async def _drop_bucket(services: Services, bucket: str) -> None:
    async with s3_client(services.s3) as client:
        try:
            paginator = client.get_paginator("list_objects_v2")
            async for page in paginator.paginate(Bucket=bucket):
                for item in page.get("Contents", []):
                    await client.delete_object(Bucket=bucket, Key=item["Key"])
            await client.delete_bucket(Bucket=bucket)
        except client.exceptions.NoSuchBucket:
            pass


def _clear_broker(services: Services, namespace: str, queues: tuple[str, ...], url: str | None = None) -> None:
    """``url``: the harness's own credentials on the site's broker space (its vhost), if it has one."""
    if services.broker.kind == "redis":
        import redis

        client = redis.Redis.from_url(services.broker.url)
        try:
            keys = list(client.scan_iter(match=f"{namespace}:*", count=500))
            if keys:
                client.delete(*keys)
            # Dramatiq's Redis broker also keeps one hash named exactly after the namespace.
            client.delete(namespace)
        finally:
            client.close()
    else:
        import pika

        connection = pika.BlockingConnection(pika.URLParameters(url or services.broker.url))
        try:
            channel = connection.channel()
            for queue in queues:
                for name in (queue, f"{queue}.DQ", f"{queue}.XQ"):
                    channel.queue_delete(queue=name)
        finally:
            connection.close()


def drop_resources(services: Services, *, database: str, bucket: str, namespace: str,
                   queues: tuple[str, ...], broker_url: str | None = None) -> list[str]:
    """Remove a database, a bucket and a broker namespace (Redis) or queues (RabbitMQ).

    Returns what could not be removed.
    """
    steps = [
        (f"database {database}", lambda: asyncio.run(drop_database(services.postgres.url, database))),
        (f"bucket {bucket}", lambda: asyncio.run(_drop_bucket(services, bucket))),
        (f"broker namespace {namespace}", lambda: _clear_broker(services, namespace, queues, broker_url)),
    ]
    return remove_each(steps)


def remove_each(steps: list[tuple[str, Callable[[], object]]]) -> list[str]:
    """Run every removal step, one failing not stopping the next; returns what could not be removed."""
    problems: list[str] = []
    for what, step in steps:
        try:
            step()
        except Exception as error:
            problems.append(f"{what}: {type(error).__name__}")
            log.warning("could not remove %s: %s", what, type(error).__name__)
    return problems


def drop_site_resources(services: Services, site: SiteRecord) -> list[str]:
    """Remove the site's database, bucket and broker state. Returns what could not be removed."""
    return drop_resources(services, database=urlsplit(site.database_url).path.lstrip("/"), bucket=site.bucket,
                          namespace=site.broker_namespace, queues=(site.task_queue, site.dead_queue),
                          broker_url=site.broker_url)
