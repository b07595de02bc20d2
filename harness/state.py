"""``sites.json``: what ``up`` stood up, in the shape scripts and operators rely on.

Written once by ``up`` (and rewritten when processes are restarted), read by
``down``, ``report``, site_tests and operators. Each site's process
environment (it holds the site's SECRET_KEY) is kept beside it in
``<state>/sites/<slug>/site.env.json`` with mode 0600, never in sites.json.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path

import msgspec


class Pids(msgspec.Struct):
    web: list[int] = msgspec.field(default_factory=list)
    worker: list[int] = msgspec.field(default_factory=list)


class SiteRecord(msgspec.Struct):
    slug: str
    name: str
    base_url: str  # where clients reach the site: its own port, or the proxy's https address (--proxy)
    upstream_url: str  # where the site's web processes listen (the proxy's upstream)
    origin: str
    cookie_name: str
    database_url: str
    broker_url: str
    broker_namespace: str
    task_queue: str
    dead_queue: str
    s3_endpoint_url: str
    bucket: str
    object_prefix: str
    site_dir: str
    venv_python: str
    # the CA that signed the proxy's certificate (clients trust it); empty on plain http
    ca_file: str = ""
    # the JSON-lines mailbox of the site's SMTP sink (harness/services.start_smtp_sink); empty: no sink
    mailbox: str = ""
    pids: Pids = msgspec.field(default_factory=Pids)
    logs: dict[str, str] = msgspec.field(default_factory=dict)

    def policy(self) -> dict:
        """The site's rendered site.toml."""
        return tomllib.loads((Path(self.site_dir) / "site.toml").read_text())


class ServiceRecord(msgspec.Struct, omit_defaults=True):
    """One backing service. ``pid`` is set only for servers the harness started itself."""

    kind: str
    url: str
    pid: int | None = None
    log: str | None = None
    data_dir: str | None = None


class S3Record(ServiceRecord):
    access_key_id: str = ""
    secret_access_key: str = ""
    region: str = "us-east-1"


# How a service keeps one site from another: by privilege (each site's own credentials reach only its
# own database, keys or vhost, and bucket), or "shared: <why>" where the service cannot enforce it.
ISOLATED = "isolated by privilege"
PRIVILEGED_SERVICES = ("database", "broker", "storage")


class Services(msgspec.Struct):
    mode: str  # "embedded" or "external" (per service: see each record's pid)
    postgres: ServiceRecord
    broker: ServiceRecord
    s3: S3Record
    # Per site: the fault proxy the site reaches S3 through (site_tests break and heal it).
    s3_proxies: dict[str, ServiceRecord] = msgspec.field(default_factory=dict)
    # Per site: the SMTP sink its mail goes to (site_tests read its mailbox: SiteRecord.mailbox).
    smtp_sinks: dict[str, ServiceRecord] = msgspec.field(default_factory=dict)
    # service ("database", "broker", "storage") -> ISOLATED or "shared: <why>"
    privilege: dict[str, str] = msgspec.field(default_factory=dict)


class ProcessCounts(msgspec.Struct):
    web: int = 1
    worker: int = 1


class ProxyRoute(msgspec.Struct, frozen=True):
    """One site behind the proxy: https://host:port/ is served by the site's web processes at ``upstream``."""

    slug: str
    host: str  # a loopback address of its own (or one shared by two sites on different ports)
    port: int
    upstream: str  # host:port

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"


class ProxyRecord(msgspec.Struct, omit_defaults=True):
    """The production lane's reverse proxy (``verify --proxy``); ``pid`` is set once it runs."""

    kind: str  # "nginx"
    version: str
    source: str  # the address it connects to the sites from: their [web] trusted_proxies
    ca_file: str
    cert_file: str
    key_file: str
    spki: str  # base64 SHA-256 of the certificate's public key, the one key Chromium is told to accept
    routes: list[ProxyRoute]
    config: str = ""
    log: str = ""
    pid: int | None = None


class SitesFile(msgspec.Struct):
    sites: list[SiteRecord]
    services: Services
    run_id: str = ""
    # processes per site; web processes share the site's port (SO_REUSEPORT)
    processes: ProcessCounts = msgspec.field(default_factory=ProcessCounts)
    proxy: ProxyRecord | None = None  # verify --proxy: every site behind it


def sites_path(state_dir: Path) -> Path:
    return Path(state_dir) / "sites.json"


def site_folder(state_dir: Path, slug: str) -> Path:
    return Path(state_dir) / "sites" / slug


def _no_state(path: Path) -> str:
    return f"{path}: no harness state here (run `up` first)"


def load(state_dir: Path) -> SitesFile:
    path = sites_path(state_dir)
    if not path.exists():
        raise FileNotFoundError(_no_state(path))
    return msgspec.json.decode(path.read_bytes(), type=SitesFile)


def run_folder(text: str) -> Path:
    """``--state`` of a command that reads a run (argparse ``type``): a folder without one is a usage error."""
    folder = Path(text)
    if not sites_path(folder).exists():
        raise argparse.ArgumentTypeError(_no_state(sites_path(folder)))
    return folder


def save(state_dir: Path, sites: SitesFile) -> None:
    path = sites_path(state_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(sites), indent=2))
    os.chmod(tmp, 0o600)  # holds the S3 keys of the run
    tmp.replace(path)


def save_site_env(state_dir: Path, slug: str, env: dict[str, str]) -> None:
    path = site_folder(state_dir, slug) / "site.env.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.json.encode(env))
    os.chmod(path, 0o600)


def load_site_env(state_dir: Path, slug: str) -> dict[str, str]:
    return msgspec.json.decode((site_folder(state_dir, slug) / "site.env.json").read_bytes(), type=dict[str, str])
