"""After the scenarios: a restart of everything on the same data, every byte read back, the audit.

``restart`` stops every site process and every server this run started, then
starts them again on the same data folders and ports (the sites' URLs stay
valid). ``check_bytes`` reads every ready file of a site straight from its
bucket and compares size and SHA-256 with the row. ``audit`` runs the site's
own ``python -m <site> audit --json``.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import asyncpg
import msgspec

from . import processes, services, stand, state
from .control import locked
from .state import ServiceRecord, SiteRecord, SitesFile


class SiteBooks(msgspec.Struct):
    """What the books of one site say after the scenarios."""

    files_checked: int = 0
    byte_problems: list[str] = msgspec.field(default_factory=list)
    audit_clean: bool = False
    findings: list[str] = msgspec.field(default_factory=list)
    audit_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.audit_clean and not self.byte_problems and self.audit_error is None


class _AuditFinding(msgspec.Struct):
    rule: str
    subject: str
    detail: str


class _AuditReport(msgspec.Struct):
    clean: bool
    findings: list[_AuditFinding]


def _restart_service(state_dir: Path, record: ServiceRecord) -> ServiceRecord:
    """The server of ``record`` stopped and started again on its own data and port."""
    services.stop_server(record)
    return services.start_again(state_dir, record)


def restart(state_dir: Path) -> None:
    """Every site process and every server this run started, stopped and started on the same state."""
    with locked(state_dir) as sites:
        for record in sites.sites:
            stand.stop_roles(record)
        own = sites.services
        for kind in ("postgres", "broker", "s3"):  # each recorded as it comes back, should a later one fail
            record = getattr(own, kind)
            if record.pid is not None:
                setattr(own, kind, _restart_service(state_dir, record))
        for record in sites.sites:
            stand.start_roles(state_dir, record, counts=sites.processes)


async def _check_bytes(sites: SitesFile, site: SiteRecord) -> tuple[int, list[str]]:
    conn = await asyncpg.connect(site.database_url)
    try:
        rows = await conn.fetch("SELECT id, object_key, size, sha256 FROM file WHERE status = 'ready' ORDER BY id")
    finally:
        await conn.close()
    problems: list[str] = []
    async with services.s3_client(sites.services.s3) as s3:
        for row in rows:
            try:
                response = await s3.get_object(Bucket=site.bucket, Key=row["object_key"])
                async with response["Body"] as body:
                    data = await body.read()
            except s3.exceptions.NoSuchKey:
                problems.append(f"file {row['id']}: object missing")
                continue
            if len(data) != row["size"] or hashlib.sha256(data).digest() != bytes(row["sha256"]):
                problems.append(f"file {row['id']}: {len(data)} bytes that do not match the row's digest")
    return len(rows), problems


def check_bytes(sites: SitesFile, site: SiteRecord) -> tuple[int, list[str]]:
    """Every ready file of the site read back from its bucket: (files checked, problems)."""
    return asyncio.run(_check_bytes(sites, site))


def audit(state_dir: Path, site: SiteRecord) -> tuple[_AuditReport | None, str | None]:
    """The site's own audit: (its report, None) or (None, why it could not run)."""
    env = state.load_site_env(state_dir, site.slug)
    done = processes.run_site_command(site.venv_python, site.slug, ["audit", "--json"], env, site.site_dir,
                                      timeout=600)
    if done.returncode not in (0, 1):
        return None, f"audit exited with {done.returncode}: {done.stderr.strip()[-300:]}"
    try:
        return msgspec.json.decode(done.stdout, type=_AuditReport), None
    except msgspec.DecodeError:
        return None, f"audit printed no report: {done.stdout.strip()[-300:]}"


def check_books(state_dir: Path) -> dict[str, SiteBooks]:
    """Restart everything, then read every byte back and audit each site."""
    restart(state_dir)
    sites = state.load(state_dir)
    books: dict[str, SiteBooks] = {}
    for site in sites.sites:
        checked, problems = check_bytes(sites, site)
        report, error = audit(state_dir, site)
        books[site.slug] = SiteBooks(
            files_checked=checked,
            byte_problems=problems,
            audit_clean=report is not None and report.clean,
            findings=[f"{f.rule} {f.subject}: {f.detail}" for f in report.findings] if report else [],
            audit_error=error,
        )
    return books
