"""Site settings: policy from ``site.toml`` plus services and secrets from the environment.

Both halves are decoded with msgspec. A bad value stops start-up with one line
that names the key (``SettingsError``), never a traceback.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta, Struct

Slug = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{1,30}$")]
QueueName = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]{0,62}$")]
Bucket = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]
Positive = Annotated[int, Meta(ge=1)]
Port = Annotated[int, Meta(ge=1024, le=65535)]

# These rules are the kit's copier.yml validators again (copier checks the answers, this the
# site.toml they became), worded alike where code rather than msgspec checks them. The kit's
# tests/test_answers.py feeds one table of good and bad answers to both, so they cannot drift.
RESERVED_SLUGS = frozenset({
    "test", "tests", "site", "harness", "site_tests", "copier", "litestar", "dramatiq", "asyncpg",
    "msgspec", "typing", "asyncio", "json", "email",
})
NAME_FORBIDDEN = re.compile(r'[\x00-\x1f\x7f<>"]')
HOST_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
ORIGIN = re.compile(
    r"^https?://(" + HOST_LABEL + r"(\." + HOST_LABEL + r")*|\[[0-9a-f:]+\])(:(?P<port>[0-9]{1,5}))?$"
)
BUCKET_LIKE_IP = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$")

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class SettingsError(Exception):
    """A setting is missing or invalid; the message names the key and is safe to print."""


class SiteIdentity(Struct, forbid_unknown_fields=True, frozen=True):
    name: Annotated[str, Meta(min_length=1, max_length=80)]
    slug: Slug
    origin: str
    port: Port
    database_name: Annotated[str, Meta(pattern=r"^[a-z_][a-z0-9_]{0,62}$")]
    auth_namespace: Slug
    task_queue: QueueName
    dead_queue: QueueName
    broker_namespace: Slug
    bucket: Bucket
    object_prefix: Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")]

    def __post_init__(self) -> None:
        check_site_name(self.name)
        if self.slug in RESERVED_SLUGS:
            raise ValueError(f"slug {json.dumps(self.slug)} would shadow a Python module; pick another")
        check_origin(self.origin, "origin")
        if self.task_queue == self.dead_queue:
            raise ValueError("dead_queue must differ from task_queue")
        check_bucket(self.bucket)


DEFAULT_FILE_TYPES = [
    "text/plain", "text/markdown", "text/csv", "application/json", "application/pdf",
    "image/png", "image/jpeg", "image/gif", "image/webp", "application/octet-stream",
]
MediaType = Annotated[str, Meta(pattern=r"^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+$")]


class FilesPolicy(Struct, forbid_unknown_fields=True, frozen=True):
    enabled: bool = True
    # A task's processor reads its whole input into memory, hence the cap (uploads stream to disk).
    max_file_bytes: Annotated[int, Meta(ge=1, le=64 * 1024 * 1024)] = 1024 * 1024
    quota_bytes: Positive = 20 * 1024 * 1024
    ttl_hours: Annotated[int, Meta(ge=1, le=87600)] = 168
    # Bodies being received at once by one web process (more answer 503 BUSY), and how long
    # one may take to arrive in full (a slower one answers 408 UPLOAD_TIMEOUT).
    concurrent_uploads: Annotated[int, Meta(ge=1, le=256)] = 8
    receive_seconds: Annotated[int, Meta(ge=1, le=3600)] = 120
    # How long one download may take in full; a slower reader's response is cut short.
    download_seconds: Annotated[int, Meta(ge=1, le=86400)] = 600
    allowed_types: Annotated[list[MediaType], Meta(min_length=1)] = msgspec.field(
        default_factory=lambda: list(DEFAULT_FILE_TYPES)
    )


class TasksPolicy(Struct, forbid_unknown_fields=True, frozen=True):
    enabled: bool = True
    max_active: Annotated[int, Meta(ge=1, le=1000)] = 5
    max_attempts: Annotated[int, Meta(ge=1, le=10)] = 3
    writes_per_minute: Positive = 30
    reads_per_minute: Positive = 120
    # Terminal tasks finished longer ago than this are deleted by maintenance (tasks/retention.py).
    history_days: Annotated[int, Meta(ge=1, le=36500)] = 90


PriceKey = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9-]{0,62}@[1-9][0-9]{0,5}$")]


class ChargesPolicy(Struct, forbid_unknown_fields=True, frozen=True):
    enabled: bool = False
    # credits per task of "<processor>@<version>"; absent or 0 = free
    prices: dict[PriceKey, Annotated[int, Meta(ge=0, le=1_000_000_000)]] = msgspec.field(
        default_factory=lambda: {"text-normalize@1": 0}
    )


class CaptchaPolicy(Struct, forbid_unknown_fields=True, frozen=True):
    provider: Literal["none", "turnstile"] = "none"
    site_key: Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-]{0,100}$")] = ""
    actions: list[Literal["task_submit", "task_retry"]] = msgspec.field(
        default_factory=lambda: ["task_submit", "task_retry"]
    )

    def __post_init__(self) -> None:
        if self.provider == "turnstile" and not self.site_key:
            raise ValueError("site_key is required when provider is turnstile")


class AuthPolicy(Struct, forbid_unknown_fields=True, frozen=True):
    session_days: Annotated[int, Meta(ge=1, le=365)] = 30
    idle_hours: Annotated[int, Meta(ge=1, le=8760)] = 72
    # Login attempts (and password checks) per 15 minutes: for one account from one client
    # address; for one account from everywhere (far higher, so a stranger's guesses never lock
    # the owner out of their own address); from one client address, whatever the account.
    login_attempts_per_account: Annotated[int, Meta(ge=1, le=10_000)] = 10
    login_attempts_per_account_total: Annotated[int, Meta(ge=1, le=100_000)] = 500
    login_attempts_per_address: Annotated[int, Meta(ge=1, le=100_000)] = 50
    # new accounts per client address per 15 minutes
    registrations_per_address: Annotated[int, Meta(ge=1, le=100_000)] = 20
    # A new account proves its address (a mailed link) before it may upload or submit (SPEC §4.1).
    verify_email: bool = False
    # How long a password reset link works.
    reset_ttl_minutes: Annotated[int, Meta(ge=5, le=24 * 60)] = 30
    # Mails asked for per 15 minutes: reset links per address asked for (known or not, alike), and
    # per client address; verification and email-change links per account.
    reset_mails_per_email: Annotated[int, Meta(ge=1, le=1000)] = 3
    reset_mails_per_address: Annotated[int, Meta(ge=1, le=100_000)] = 20
    link_mails_per_account: Annotated[int, Meta(ge=1, le=1000)] = 5

    def __post_init__(self) -> None:
        if self.login_attempts_per_account_total < self.login_attempts_per_account:
            raise ValueError("login_attempts_per_account_total must be at least login_attempts_per_account")


# A mailbox address (what SMTP's MAIL FROM takes): no display name, no spaces or angle brackets.
MAIL_ADDRESS = r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$"


class MailPolicy(Struct, forbid_unknown_fields=True, frozen=True):
    # The From address of the site's mails (their display name is the site's name).
    sender: Annotated[str, Meta(pattern=MAIL_ADDRESS, max_length=254)] = "no-reply@localhost"


class WebPolicy(Struct, forbid_unknown_fields=True, frozen=True):
    # Reverse proxies whose X-Forwarded-For names the client (addresses or CIDR networks). The
    # header of any other peer is ignored: the client is then the peer itself.
    trusted_proxies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for entry in self.trusted_proxies:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"trusted_proxies: {entry!r} is not an IP address or network") from None


class Policy(Struct, forbid_unknown_fields=True, frozen=True):
    """The contents of site.toml."""

    site: SiteIdentity
    auth: AuthPolicy = AuthPolicy()
    files: FilesPolicy = FilesPolicy()
    tasks: TasksPolicy = TasksPolicy()
    charges: ChargesPolicy = ChargesPolicy()
    captcha: CaptchaPolicy = CaptchaPolicy()
    web: WebPolicy = WebPolicy()
    mail: MailPolicy = MailPolicy()

    def __post_init__(self) -> None:
        if self.tasks.enabled and not self.files.enabled:
            raise ValueError("tasks.enabled requires files.enabled (tasks read stored files)")
        if self.files.quota_bytes < self.files.max_file_bytes:
            raise ValueError("files.quota_bytes must be at least files.max_file_bytes")


class Environment(Struct, forbid_unknown_fields=True, frozen=True):
    """Services and secrets. Field names are the lower-cased environment variable names."""

    app_origin: str | None = None
    database_url: str | None = None
    broker_url: str | None = None
    s3_endpoint_url: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_region: str = "us-east-1"
    secret_key: Annotated[str, Meta(min_length=32)] | None = None
    turnstile_secret_key: Annotated[str, Meta(min_length=1, max_length=200)] | None = None
    metrics_token: Annotated[str, Meta(min_length=16, max_length=200)] | None = None
    captcha_verify_url: str = "https://challenges.cloudflare.com/turnstile/v0/siteverify"
    # smtp://[user:password@]host:port (STARTTLS when offered) or smtps://… (TLS from the start)
    smtp_url: str | None = None
    # Set by `dev` only: the mailbox file of its embedded SMTP sink, listed at /dev/mail.
    dev_mailbox: str | None = None

    def __post_init__(self) -> None:
        if self.app_origin is not None:
            check_origin(self.app_origin, "APP_ORIGIN")
        check_url(self.database_url, ("postgres", "postgresql"), "DATABASE_URL")
        check_url(self.broker_url, ("redis", "rediss", "amqp", "amqps"), "BROKER_URL")
        check_url(self.s3_endpoint_url, ("http", "https"), "S3_ENDPOINT_URL")
        check_url(self.captcha_verify_url, ("http", "https"), "CAPTCHA_VERIFY_URL")
        check_url(self.smtp_url, ("smtp", "smtps"), "SMTP_URL")
        if self.s3_endpoint_url and not (self.s3_access_key_id and self.s3_secret_access_key):
            raise ValueError("S3_ENDPOINT_URL needs S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY")


ENVIRONMENT_KEYS = tuple(f.upper() for f in Environment.__struct_fields__)


class Settings(Struct, frozen=True):
    policy: Policy
    env: Environment

    @property
    def site(self) -> SiteIdentity:
        return self.policy.site

    @property
    def origin(self) -> str:
        return self.env.app_origin or self.policy.site.origin

    @property
    def secure_cookies(self) -> bool:
        return self.origin.startswith("https://")

    @property
    def session_cookie(self) -> str:
        # On https the __Host- prefix makes the browser refuse the cookie unless it is Secure,
        # Path=/ and has no Domain: no other host or port of the domain can plant or widen it.
        prefix = "__Host-" if self.secure_cookies else ""
        return f"{prefix}{self.policy.site.auth_namespace}_session"

    def require_database_url(self) -> str:
        if not self.env.database_url:
            raise SettingsError(
                f"DATABASE_URL is not set, and no `dev` is running on the state folder: start one "
                f"(python -m {self.site.slug} dev) in another terminal, or set DATABASE_URL"
            )
        return self.env.database_url

    @property
    def captcha_enabled(self) -> bool:
        return self.policy.captcha.provider == "turnstile"

    def require_captcha_secret(self) -> str:
        if not self.env.turnstile_secret_key:
            raise SettingsError("TURNSTILE_SECRET_KEY is not set (captcha provider is turnstile)")
        return self.env.turnstile_secret_key

    def require_secret_key(self) -> str:
        if not self.env.secret_key:
            raise SettingsError("SECRET_KEY is not set (at least 32 random characters)")
        return self.env.secret_key


def check_site_name(value: str) -> None:
    if not value.strip():
        raise ValueError("name must not be empty")
    if NAME_FORBIDDEN.search(value):
        # the name is shown in page titles and the OpenAPI title
        raise ValueError("name must not contain control characters, quotes or angle brackets")


def check_origin(value: str, name: str) -> None:
    found = ORIGIN.search(value)
    if not found:
        raise ValueError(
            f"{name} must be a URL origin like http://127.0.0.1:8410 or https://files.example.com "
            f"(lowercase, no path, no trailing slash; got {value!r})"
        )
    if found["port"] and int(found["port"]) > 65535:
        raise ValueError(f"{name} port must be at most 65535 (got {value!r})")


def check_bucket(value: str) -> None:
    """S3's bucket naming rules beyond the pattern of ``Bucket``."""
    if ".." in value or ".-" in value or "-." in value:
        raise ValueError("bucket must not contain '..', '.-' or '-.'")
    if BUCKET_LIKE_IP.search(value):
        raise ValueError("bucket must not look like an IP address")
    if value.startswith(("xn--", "sthree-")) or value.endswith(("-s3alias", "--ol-s3")):
        raise ValueError("bucket uses a prefix or suffix reserved by S3")


def check_url(value: str | None, schemes: tuple[str, ...], name: str) -> None:
    if value is None:
        return
    parts = urlsplit(value)
    if parts.scheme not in schemes or not (parts.hostname or parts.query):
        raise ValueError(f"{name} must be a {'/'.join(schemes)} URL")


def _describe(error: msgspec.ValidationError, where: str, upper: bool) -> str:
    # msgspec says e.g. "Expected `int >= 1`, got `0` - at `$.tasks.max_active`";
    # rewrite the path as the key the operator has to edit.
    message = str(error)
    text, sep, path = message.rpartition(" - at `$.")
    if not sep:
        return f"{where}: {message}"
    key = path.rstrip("`").replace("[", ".").replace("]", "")
    return f"{where} {key.upper() if upper else key}: {text}"


def load_policy(path: Path | None = None) -> Policy:
    path = path or Path(os.environ.get("SITE_CONFIG") or PROJECT_ROOT / "site.toml")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"{path}: file not found (set SITE_CONFIG)") from None
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"{path}: not valid TOML: {error}") from None
    try:
        return msgspec.convert(raw, Policy)
    except msgspec.ValidationError as error:
        raise SettingsError(_describe(error, str(path), upper=False)) from None


def load_environment(environ: dict[str, str] | None = None) -> Environment:
    environ = os.environ if environ is None else environ
    raw = {key.lower(): environ[key] for key in ENVIRONMENT_KEYS if environ.get(key)}
    try:
        return msgspec.convert(raw, Environment, strict=False)
    except msgspec.ValidationError as error:
        raise SettingsError(_describe(error, "environment", upper=True)) from None


def load_settings(path: Path | None = None, environ: dict[str, str] | None = None) -> Settings:
    return Settings(policy=load_policy(path), env=load_environment(environ))
