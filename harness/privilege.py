"""Each site holds only its own keys: a PostgreSQL role that owns only its database, a broker user
whose rights cover only its namespace (Valkey/Redis ACL) or its own vhost (RabbitMQ), and an S3
identity allowed only its bucket. The harness keeps the administrators' credentials; a site's
processes get the site's own (``site.env.json``).

Where a service cannot enforce it, the grant says so instead of pretending: each service of each
site gets a verdict, ``isolated by privilege`` or ``shared: <why>``, found by asking the service
itself (a wrong password, a passwordless user, a bucket the site may not create), never assumed.
docs/operations.md "Provisioning a site on shared servers" gives the same steps for production.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

import asyncpg
import msgspec
from botocore.exceptions import ClientError

from . import services
from .identifiers import quote_ident
from .state import ISOLATED, Services

# What Dramatiq's Redis broker (its Lua dispatch script included), the task queue's wake-ups (PUBLISH and
# SUBSCRIBE on channels inside the namespace) and the site's readiness check run.
# KEYS is among them: Dramatiq's maintenance lists its own dead workers' acks with it, and an ACL cannot
# narrow KEYS to a pattern, so a site can list (never read or write) the key names of another site.
# (redis-py's CLIENT SETINFO on connect may be refused: it ignores that, and Redis 7.0 has no such command.)
REDIS_SITE_COMMANDS = (
    "ping", "evalsha", "script|load", "zadd", "zrangebyscore", "zrem", "smembers", "sadd",
    "srem", "scard", "hexists", "hset", "hget", "hmget", "hdel", "hlen", "rpush", "lpop", "del", "keys",
    "publish", "subscribe",
)
GRANT_TIMEOUT = 30.0
_S3_CONFIG = threading.Lock()
_CATALOG = threading.Lock()
_VERDICTS = threading.Lock()


class PrivilegeError(RuntimeError):
    """A site's own credentials could not be made; the message names the service."""


class Grant(msgspec.Struct):
    """A site's own credentials, and how each service keeps it from the others."""

    database_url: str
    broker_url: str
    admin_broker_url: str  # the harness's own credentials on the site's broker space (its vhost)
    s3_access_key_id: str
    s3_secret_access_key: str
    verdicts: dict[str, str]


def grant_site(run: Services, *, database: str, namespace: str, bucket: str) -> Grant:
    """Create the site's database and bucket, and its own credentials for them and for the broker."""
    with _CATALOG:  # sites are granted in parallel; two GRANT/REVOKEs on one catalogue row would collide
        database_url, database_verdict = asyncio.run(_grant_database(run, database, secrets.token_urlsafe(32)))
    admin_broker_url = run.broker.url
    if run.broker.kind == "redis":
        broker_url, broker_verdict = _grant_redis(run.broker.url, namespace, secrets.token_urlsafe(32))
    else:
        broker_url, broker_verdict = _grant_rabbitmq(run.broker.url, namespace, secrets.token_urlsafe(32))
        if broker_url != run.broker.url:  # a vhost of its own
            admin_broker_url = urlsplit(run.broker.url)._replace(path="/" + namespace).geturl()
    with _S3_CONFIG:  # sites are granted in parallel; the S3 server's identities are one file
        key_id, secret, storage_verdict = asyncio.run(_grant_s3(run, namespace, bucket))
    return Grant(database_url=database_url, broker_url=broker_url, admin_broker_url=admin_broker_url,
                 s3_access_key_id=key_id,
                 s3_secret_access_key=secret,
                 verdicts={"database": database_verdict, "broker": broker_verdict, "storage": storage_verdict})


def record_verdicts(run: Services, verdicts: dict[str, str]) -> None:
    """The run's verdict per service: shared as soon as one site's is."""
    with _VERDICTS:
        for service, verdict in verdicts.items():
            if run.privilege.get(service, ISOLATED) == ISOLATED:
                run.privilege[service] = verdict


def revoke_site(run: Services, *, database: str, namespace: str) -> list[str]:
    """Remove the site's role, broker user or vhost (its database, bucket and keys are dropped by
    services.drop_resources). Returns what could not be removed."""
    steps = [(f"role {database}", lambda: asyncio.run(_drop_role(run.postgres.url, database)))]
    if run.broker.kind == "redis":
        steps.append((f"broker user {namespace}", lambda: _drop_redis_user(run.broker.url, namespace)))
    elif _rabbitmqctl_here(run.broker.url):
        steps.append((f"vhost {namespace}", lambda: _drop_rabbitmq(namespace)))
    return services.remove_each(steps)


# --- PostgreSQL ---------------------------------------------------------------------------


def _with_credentials(url: str, user: str, password: str, path: str | None = None) -> str:
    parts = urlsplit(url)
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc, path=parts.path if path is None else path).geturl()


async def _grant_database(run: Services, name: str, password: str) -> tuple[str, str]:
    role = quote_ident(name)
    conn = await asyncpg.connect(run.postgres.url)
    try:
        # CREATE/ALTER ROLE take no parameters: the password goes in as the server's own quoted literal.
        literal = await conn.fetchval("SELECT quote_literal($1::text)", password)
        verb = "ALTER" if await conn.fetchval("SELECT true FROM pg_roles WHERE rolname = $1", name) else "CREATE"
        await conn.execute(f"{verb} ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
                           f"NOBYPASSRLS PASSWORD {literal}")
        await conn.execute(f"CREATE DATABASE {role} OWNER {role}")
        await conn.execute(f"REVOKE ALL ON DATABASE {role} FROM PUBLIC")
        if run.postgres.pid is not None and await conn.fetchval(  # a server of the run's own:
                "SELECT has_database_privilege('public', 'postgres', 'CONNECT')"):  # its maintenance databases
            await conn.execute("REVOKE CONNECT ON DATABASE postgres, template1 FROM PUBLIC")  # are no one's
    finally:
        await conn.close()
    url = _with_credentials(run.postgres.url, name, password, "/" + name)
    try:
        probe = await asyncpg.connect(_with_credentials(url, name, "not-" + password), timeout=10)
    except (asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError):
        return url, ISOLATED
    await probe.close()
    return url, "shared: the server lets a role sign in without its password (pg_hba trust)"


async def _drop_role(server_url: str, name: str) -> None:
    await services.execute_on_server(server_url, f"DROP ROLE IF EXISTS {quote_ident(name)}")


# --- Valkey / Redis -----------------------------------------------------------------------


def _grant_redis(admin_url: str, user: str, password: str) -> tuple[str, str]:
    import redis

    client = redis.Redis.from_url(admin_url)
    try:
        try:
            client.execute_command("ACL", "SETUSER", user, "reset", "on", f">{password}", f"~{user}", f"~{user}:*",
                                   "resetchannels", f"&{user}:*", "-@all",
                                   *(f"+{command}" for command in REDIS_SITE_COMMANDS))
        except redis.ResponseError:
            return admin_url, "shared: the broker refused to create a user for the site (ACL SETUSER)"
        with contextlib.suppress(redis.ResponseError):  # a server without an ACL file keeps users in memory
            client.execute_command("ACL", "SAVE")
    finally:
        client.close()
    parts = urlsplit(admin_url)
    anonymous = redis.Redis(host=parts.hostname, port=parts.port or 6379, socket_timeout=5)
    try:
        anonymous.set(f"{user}:privilege-probe", 1)
        anonymous.delete(f"{user}:privilege-probe")
        verdict = "shared: the broker's default user needs no password"
    except (redis.AuthenticationError, redis.exceptions.NoPermissionError):
        verdict = ISOLATED
    except redis.ResponseError as error:  # NOAUTH: the default user has a password, or is off
        verdict = ISOLATED if "NOAUTH" in str(error) or "NOPERM" in str(error) else f"shared: {error}"
    finally:
        anonymous.close()
    return _with_credentials(admin_url, user, password), verdict


def _drop_redis_user(admin_url: str, user: str) -> None:
    import redis

    client = redis.Redis.from_url(admin_url)
    try:
        client.execute_command("ACL", "DELUSER", user)
        with contextlib.suppress(redis.ResponseError):
            client.execute_command("ACL", "SAVE")
    finally:
        client.close()


# --- RabbitMQ -----------------------------------------------------------------------------


def _rabbitmqctl_here(url: str) -> bool:
    """rabbitmqctl administers the broker on this machine only."""
    return shutil.which("rabbitmqctl") is not None and urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def _rabbitmqctl(*args: str, stdin: str | None = None) -> None:
    done = subprocess.run(["rabbitmqctl", "--quiet", *args], input=stdin, capture_output=True, text=True,
                          timeout=60, check=False)
    if done.returncode != 0:
        raise PrivilegeError(f"rabbitmqctl {args[0]} failed: {done.stderr.strip()[-200:]}")


def _grant_rabbitmq(admin_url: str, name: str, password: str) -> tuple[str, str]:
    import pika
    import pika.exceptions

    if not _rabbitmqctl_here(admin_url):
        return admin_url, "shared: rabbitmqctl is not available here to give the site a vhost and user"
    admin = urlsplit(admin_url).username or "guest"
    _rabbitmqctl("add_vhost", name)
    with contextlib.suppress(PrivilegeError):  # a user left by an earlier run of the same name
        _rabbitmqctl("delete_user", name)
    # The password on stdin: as an argument it shows in the process list, it is echoed in rabbitmqctl's
    # errors, and one that begins with "-" (token_urlsafe, one time in 32) is read as an option.
    _rabbitmqctl("add_user", name, stdin=password)
    _rabbitmqctl("set_permissions", "-p", name, name, ".*", ".*", ".*")
    _rabbitmqctl("set_permissions", "-p", name, admin, ".*", ".*", ".*")  # the harness looks into its queues
    url = _with_credentials(admin_url, name, password, "/" + name)
    try:
        pika.BlockingConnection(pika.URLParameters(_with_credentials(admin_url, name, password, "/"))).close()
    except (pika.exceptions.ProbableAccessDeniedError, pika.exceptions.ConnectionClosedByBroker):
        return url, ISOLATED
    return url, "shared: the site's user could open the default vhost"


def _drop_rabbitmq(name: str) -> None:
    _rabbitmqctl("delete_vhost", name)
    _rabbitmqctl("delete_user", name)


# --- S3 -----------------------------------------------------------------------------------


async def _grant_s3(run: Services, name: str, bucket: str) -> tuple[str, str, str]:
    s3 = run.s3
    async with services.s3_client(s3) as client:
        try:
            await client.create_bucket(Bucket=bucket)
        except ClientError as error:  # two sites of a fleet may share a bucket (each under its own prefix)
            if error.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise
    if s3.pid is None or not s3.data_dir:
        return (s3.access_key_id, s3.secret_access_key,
                "shared: the harness cannot make identities on this S3 server (the site holds the harness's keys)")
    sharing = _bucket_holders(Path(s3.data_dir), bucket) - {name}
    key_id, secret = services.embedded().add_s3_identity(Path(s3.data_dir), s3.pid, name, bucket)
    own = msgspec.structs.replace(s3, access_key_id=key_id, secret_access_key=secret)
    deadline = time.monotonic() + GRANT_TIMEOUT
    async with services.s3_client(own) as client:
        while True:  # the server loads the new identity on SIGHUP, a moment later
            try:
                await client.list_objects_v2(Bucket=bucket, MaxKeys=1)
                break
            except ClientError:
                if time.monotonic() > deadline:
                    raise PrivilegeError(f"the S3 server did not load the identity of {name}") from None
                await asyncio.sleep(0.1)
        try:
            await client.create_bucket(Bucket=f"{bucket[:40]}-probe-{secrets.token_hex(4)}")
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "AccessDenied":
                raise
        else:
            return key_id, secret, "shared: the site's identity could create buckets"
    if sharing:  # an identity is for a whole bucket: sites that share one share their objects
        return key_id, secret, f"shared: bucket {bucket} is shared with {', '.join(sorted(sharing))}"
    return key_id, secret, ISOLATED


def _bucket_holders(data_dir: Path, bucket: str) -> set[str]:
    """The identities of the S3 server allowed into ``bucket`` (the administrator's aside)."""
    document = msgspec.json.decode((data_dir / "s3.json").read_bytes())
    return {identity["name"] for identity in document["identities"]
            if any(action.endswith(f":{bucket}") for action in identity.get("actions", []))}
