"""harness/privilege.py against real servers: each site's own credentials, and a verdict per service
found by asking the service — isolated on the embedded servers, shared (with the reason) where the
server cannot enforce it, as this machine's own PostgreSQL (trust) and Redis (no password) cannot."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pika
import pytest
import redis

from harness import privilege, services
from harness.services import embedded
from harness.state import ISOLATED, S3Record, ServiceRecord, Services


def answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    folder = tmp_path_factory.mktemp("privilege")
    provisioned = services.provision(folder, environ={})
    try:
        yield provisioned
    finally:
        services.stop_services(provisioned)
        embedded().remove_state(Path(provisioned.postgres.data_dir))


def test_an_embedded_site_gets_its_own_keys_and_every_service_says_isolated(run: Services) -> None:
    name = f"g_{secrets.token_hex(4)}"
    grant = privilege.grant_site(run, database=name, namespace=name, bucket=name.replace("_", "-") + "-files")
    assert grant.verdicts == {"database": ISOLATED, "broker": ISOLATED, "storage": ISOLATED}
    assert name in grant.database_url and run.postgres.url.split("@")[0] not in grant.database_url
    assert grant.s3_access_key_id != run.s3.access_key_id

    async def own_database() -> tuple[str, bool]:
        conn = await asyncpg.connect(grant.database_url)
        try:
            return await conn.fetchval("SELECT current_user"), await conn.fetchval(
                "SELECT rolcreatedb FROM pg_roles WHERE rolname = current_user")
        finally:
            await conn.close()

    assert asyncio.run(own_database()) == (name, False)
    client = redis.Redis.from_url(grant.broker_url)
    try:
        client.hset(f"{name}:q.msgs", "m", "x")  # its own namespace: yes
        client.publish(f"{name}:q.wake", b"")  # its own channels too (the task queue's wake-ups)
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.hset("another_site:q.msgs", "m", "x")
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.publish("another_site:q.wake", b"")
    finally:
        client.close()
    assert privilege.revoke_site(run, database=name, namespace=name) == [
        f"role {name}: DependentObjectsStillExistError"]  # its database first (services.drop_resources)
    asyncio.run(services.drop_database(run.postgres.url, name))
    assert privilege.revoke_site(run, database=name, namespace=name) == []


def test_two_sites_sharing_a_bucket_are_told_they_share_it(run: Services) -> None:
    bucket = f"shared-{secrets.token_hex(4)}"
    first = asyncio.run(privilege._grant_s3(run, f"s_{secrets.token_hex(3)}", bucket))
    second_name = f"s_{secrets.token_hex(3)}"
    second = asyncio.run(privilege._grant_s3(run, second_name, bucket))
    assert first[2] == ISOLATED
    assert second[2].startswith(f"shared: bucket {bucket} is shared with ")


@pytest.mark.skipif(not answers("127.0.0.1", 5432), reason="no PostgreSQL on 127.0.0.1:5432 on this machine")
def test_a_server_that_trusts_every_role_is_reported_shared() -> None:
    server = ServiceRecord(kind="postgres", url="postgresql://postgres@127.0.0.1:5432/postgres")
    run = Services(mode="external", postgres=server, broker=server, s3=S3Record(kind="s3", url=""))
    name = f"g_{secrets.token_hex(4)}"
    try:
        _url, verdict = asyncio.run(privilege._grant_database(run, name, secrets.token_urlsafe(16)))
    finally:
        asyncio.run(services.drop_database(server.url, name))
        asyncio.run(privilege._drop_role(server.url, name))
    if verdict == ISOLATED:
        pytest.skip("this machine's PostgreSQL asks for passwords")
    assert verdict == "shared: the server lets a role sign in without its password (pg_hba trust)"


@pytest.mark.skipif(not answers("127.0.0.1", 6379), reason="no Redis on 127.0.0.1:6379 on this machine")
def test_a_broker_whose_default_user_needs_no_password_is_reported_shared() -> None:
    name = f"g_{secrets.token_hex(4)}"
    try:
        _url, verdict = privilege._grant_redis("redis://127.0.0.1:6379/0", name, secrets.token_urlsafe(16))
    finally:
        privilege._drop_redis_user("redis://127.0.0.1:6379/0", name)
    if verdict == ISOLATED:
        pytest.skip("this machine's Redis asks for a password")
    assert verdict == "shared: the broker's default user needs no password"


@pytest.mark.skipif(not (answers("127.0.0.1", 5672) and shutil.which("rabbitmqctl")),
                    reason="no RabbitMQ with rabbitmqctl on this machine")
def test_a_rabbitmq_site_gets_its_vhost_whatever_its_password_begins_with() -> None:
    # token_urlsafe begins with "-" one time in 32: rabbitmqctl must never read the password as an option.
    name = f"g_{secrets.token_hex(4)}"
    password = "-n" + secrets.token_urlsafe(16)
    try:
        url, verdict = privilege._grant_rabbitmq("amqp://guest:guest@127.0.0.1:5672/", name, password)
        pika.BlockingConnection(pika.URLParameters(url)).close()  # its own vhost, with that password
    finally:
        privilege._drop_rabbitmq(name)
    assert verdict == ISOLATED
