"""Isolation by privilege, from the attacker's seat: with site A's own process environment (what A's
web and worker processes hold, ``site.env.json``), nothing of site B's can be reached. Each attempt
must be refused by the service itself — PostgreSQL, the broker, the S3 server — never by site code.

Where the run's services cannot enforce it (an external PostgreSQL that trusts every role, an S3
server without identities, a broker the harness cannot administer), the run's record says
``shared: <why>`` for that service and its attempts are skipped with that reason; ``verify
--require-privilege`` fails such a run.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest
from aiobotocore.session import get_session
from botocore.exceptions import ClientError

from harness import state
from harness.state import SiteRecord, SitesFile

REFUSED_BY_POSTGRES = (asyncpg.InsufficientPrivilegeError, asyncpg.InvalidAuthorizationSpecificationError,
                       asyncpg.InvalidPasswordError)


def environment_of(state_dir: Path, site: SiteRecord) -> dict[str, str]:
    return state.load_site_env(state_dir, site.slug)


def require_isolated(run: SitesFile, service: str) -> None:
    verdict = run.services.privilege.get(service, "shared: not provisioned by privilege")
    if verdict != state.ISOLATED:
        pytest.skip(f"{service}: {verdict}")


def with_path(url: str, database: str) -> str:
    return urlsplit(url)._replace(path="/" + database).geturl()


def with_user(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=f"{user}:{password}@{parts.hostname}:{parts.port}").geturl()


def database_of(site: SiteRecord) -> str:
    return urlsplit(site.database_url).path.lstrip("/")


def role_of(state_dir: Path, site: SiteRecord) -> str:
    """The role the site's processes sign in as (site.database_url is the harness's own view)."""
    return urlsplit(environment_of(state_dir, site)["DATABASE_URL"]).username or ""


async def _refused(url: str) -> type[BaseException] | None:
    """The refusal PostgreSQL answered a connection with, or None if it connected."""
    try:
        conn = await asyncpg.connect(url, timeout=10)
    except REFUSED_BY_POSTGRES as error:
        return type(error)
    await conn.close()
    return None


# --- PostgreSQL ---------------------------------------------------------------------------


def test_a_site_cannot_open_another_sites_database(run: SitesFile, state_dir: Path,
                                                   pair: tuple[SiteRecord, SiteRecord]) -> None:
    require_isolated(run, "database")
    a, b = pair
    mine = environment_of(state_dir, a)["DATABASE_URL"]
    assert asyncio.run(_refused(mine)) is None  # its own database: yes
    assert asyncio.run(_refused(with_path(mine, database_of(b)))) is not None


def test_a_site_cannot_sign_in_as_another_sites_role(run: SitesFile, state_dir: Path,
                                                     pair: tuple[SiteRecord, SiteRecord]) -> None:
    require_isolated(run, "database")
    a, b = pair
    mine = urlsplit(environment_of(state_dir, a)["DATABASE_URL"])
    theirs = role_of(state_dir, b)
    assert theirs not in (mine.username, "", "postgres")
    for password in (mine.password or "", "", "postgres"):  # its own password, none, a guess
        url = with_user(with_path(mine.geturl(), database_of(b)), theirs, password)
        assert asyncio.run(_refused(url)) is not None, f"signed in as {theirs}"
    # nor as the server's administrator
    admin = urlsplit(run.services.postgres.url).username or "postgres"
    assert asyncio.run(_refused(with_user(mine.geturl(), admin, mine.password or ""))) is not None


def test_a_site_holds_no_server_wide_rights(run: SitesFile, state_dir: Path, site: SiteRecord) -> None:
    require_isolated(run, "database")

    async def attempt() -> dict[str, object]:
        conn = await asyncpg.connect(environment_of(state_dir, site)["DATABASE_URL"])
        outcome: dict[str, object] = {}
        try:
            outcome["rights"] = tuple(await conn.fetchrow(
                "SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = current_user"))
            for name, statement in (("create database", f'CREATE DATABASE "x_{secrets.token_hex(4)}"'),
                                    ("create role", f'CREATE ROLE "x_{secrets.token_hex(4)}" LOGIN'),
                                    ("read files", "SELECT pg_read_file('postgresql.conf')"),
                                    ("signal backends", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                                        "WHERE usename <> current_user")):
                try:
                    await conn.execute(statement)
                    outcome[name] = "allowed"
                except asyncpg.InsufficientPrivilegeError:
                    outcome[name] = "refused"
        finally:
            await conn.close()
        return outcome

    outcome = asyncio.run(attempt())
    assert outcome == {"rights": (False, False, False, False), "create database": "refused",
                       "create role": "refused", "read files": "refused", "signal backends": "refused"}


def test_another_sites_statements_are_hidden_in_shared_catalogues(run: SitesFile, state_dir: Path,
                                                                  pair: tuple[SiteRecord, SiteRecord]) -> None:
    require_isolated(run, "database")
    a, b = pair

    async def look() -> list[str | None]:
        conn = await asyncpg.connect(environment_of(state_dir, a)["DATABASE_URL"])
        try:
            return [row["query"] for row in await conn.fetch(
                "SELECT query FROM pg_stat_activity WHERE datname = $1", database_of(b))]
        finally:
            await conn.close()

    seen = asyncio.run(look())
    assert seen, f"{b.slug}'s web keeps connections open: they are listed"
    assert set(seen) <= {"<insufficient privilege>", None}, seen


# --- S3 -----------------------------------------------------------------------------------


def _s3_codes(env: dict[str, str], bucket: str, own_bucket: str) -> dict[str, str]:
    """The answer to each attempt on ``bucket`` with these keys: "ok" or the S3 error code."""

    async def attempts() -> dict[str, str]:
        async with get_session().create_client(
            "s3", endpoint_url=env["S3_ENDPOINT_URL"], region_name=env.get("S3_REGION", "us-east-1"),
            aws_access_key_id=env["S3_ACCESS_KEY_ID"], aws_secret_access_key=env["S3_SECRET_ACCESS_KEY"],
        ) as client:
            calls = {
                "list": lambda: client.list_objects_v2(Bucket=bucket, MaxKeys=1),
                "read": lambda: client.get_object(Bucket=bucket, Key="probe-that-does-not-exist"),
                "write": lambda: client.put_object(Bucket=bucket, Key=f"probe-{secrets.token_hex(4)}", Body=b"x"),
                "create bucket": lambda: client.create_bucket(Bucket=f"{own_bucket[:40]}-{secrets.token_hex(4)}"),
            }
            codes = {}
            for name, call in calls.items():
                try:
                    response = await call()
                    if "Body" in response:
                        response["Body"].close()
                    codes[name] = "ok"
                except ClientError as error:
                    codes[name] = error.response.get("Error", {}).get("Code", "?")
            return codes

    return asyncio.run(attempts())


def test_a_site_cannot_touch_another_sites_bucket(run: SitesFile, state_dir: Path,
                                                  pair: tuple[SiteRecord, SiteRecord]) -> None:
    require_isolated(run, "storage")
    a, b = pair
    codes = _s3_codes(environment_of(state_dir, a), b.bucket, a.bucket)
    # "read" of a missing key: AccessDenied, not NoSuchKey — the server refused before looking
    assert codes == {"list": "AccessDenied", "read": "AccessDenied", "write": "AccessDenied",
                     "create bucket": "AccessDenied"}


# --- the broker ---------------------------------------------------------------------------


def test_a_site_cannot_reach_another_sites_broker_keys(run: SitesFile, state_dir: Path,
                                                       pair: tuple[SiteRecord, SiteRecord]) -> None:
    require_isolated(run, "broker")
    a, b = pair
    url = environment_of(state_dir, a)["BROKER_URL"]
    if run.services.broker.kind == "redis":
        import redis

        client = redis.Redis.from_url(url)
        listener = client.pubsub()

        def listen(channel: str) -> None:
            listener.subscribe(channel)
            listener.get_message(timeout=5)  # a refusal comes back as the subscription's reply

        theirs = f"{b.broker_namespace}:{b.task_queue}.wake"  # where b's senders wake b's worker
        try:
            client.ping()
            refused = []
            # A script is checked against the keys it declares (the senders put messages in with one).
            pusher = client.script_load("return redis.call('rpush', KEYS[1], 'probe')")
            for name, call in (("write", lambda: client.set(f"{b.broker_namespace}:probe", 1)),
                               ("write by script",
                                lambda: client.evalsha(pusher, 1, f"{b.broker_namespace}:{b.task_queue}")),
                               ("read", lambda: client.lrange(f"{b.broker_namespace}:{b.task_queue}", 0, 0)),
                               ("scan names", lambda: list(client.scan_iter(match=f"{b.broker_namespace}:*"))),
                               ("server settings", lambda: client.config_get("dir")),
                               ("publish", lambda: client.publish(theirs, b"")),
                               ("subscribe", lambda: listen(theirs))):
                try:
                    call()
                except redis.exceptions.NoPermissionError:
                    refused.append(name)
            # KEYS stays allowed (Dramatiq's maintenance runs it; an ACL cannot narrow it to a pattern): another
            # site's key names can be listed, never their values — docs/operations.md says so.
            assert refused == ["write", "write by script", "read", "scan names", "server settings", "publish",
                               "subscribe"]
        finally:
            listener.close()
            client.close()
    else:
        import pika
        import pika.exceptions

        theirs = urlsplit(environment_of(state_dir, b)["BROKER_URL"]).path
        assert theirs not in ("", "/"), "each site has a vhost of its own"
        with pytest.raises((pika.exceptions.ProbableAccessDeniedError, pika.exceptions.ConnectionClosedByBroker)):
            pika.BlockingConnection(pika.URLParameters(urlsplit(url)._replace(path=theirs).geturl())).close()
