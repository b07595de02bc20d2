"""``up`` and ``down``: stand N rendered sites up on shared services, and take them down again."""

from __future__ import annotations

import logging
import secrets
import shutil
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from . import fleet_plan, owner_code, privilege, processes, progress, proxy, rehearsal, services, state
from .fleet_plan import Planned
from .render import render_site, site_answers
from .state import SiteRecord, SitesFile

log = logging.getLogger(__name__)

ROLES = ("web", "worker")
WORKER_THREADS = 4


class SiteTimings(msgspec.Struct):
    render_s: float = 0.0
    install_s: float = 0.0
    migrate_s: float = 0.0
    start_s: float = 0.0


class RunInfo(msgspec.Struct):
    """Extra facts about a run for the report (kept next to sites.json)."""

    run_id: str
    answers: dict[str, dict]
    timings: dict[str, SiteTimings]
    fleet: dict[str, Planned] = msgspec.field(default_factory=dict)  # verify --site/--answers: where each came from


class StandError(RuntimeError):
    """Standing a site up failed; the message names the site and the step."""


def _timed(timings: SiteTimings, field: str, step, what: str):
    """Run ``step``, add its time to ``field`` and show its start and end (``what``: site and step)."""
    started = time.monotonic()
    try:
        with progress.step(what):
            return step()
    finally:
        setattr(timings, field, round(getattr(timings, field) + time.monotonic() - started, 2))


def _prepare_site(state_dir: Path, services_: state.Services, index: int, run_id: str, overrides: dict | None,
                  behind: state.ProxyRecord | None = None, public: tuple[str, int] | None = None,
                  planned: Planned | None = None) -> tuple[SiteRecord, dict, SiteTimings]:
    timings = SiteTimings()
    if planned:  # a site of the user's fleet: its own answers and port, served on loopback
        port, answers = planned.port, {**planned.answers, "origin": fleet_plan.served_origin(planned)}
    else:
        port = processes.free_port()
        answers = site_answers(index, run_id, port, overrides)
    if public:  # behind the proxy the site's origin is its public https address
        answers["origin"] = f"https://{public[0]}:{public[1]}"
    slug = answers["slug"]
    folder = state.site_folder(state_dir, slug)
    site_dir = folder / "site"
    if planned:
        _timed(timings, "render_s", lambda: fleet_plan.place(planned, site_dir), f"{slug}: copy the site")
    else:
        _timed(timings, "render_s", lambda: render_site(answers, site_dir), f"{slug}: render")
        # and the processor an owner adds as docs/processors.md says, deployed beside the shipped one
        owner_code.add_documented_processor(site_dir, slug)
    if behind:
        proxy.trust_the_proxy(site_dir / "site.toml", behind.source)
    grant = _timed(timings, "migrate_s",
                   lambda: privilege.grant_site(services_, database=answers["database_name"],
                                                namespace=answers["broker_namespace"], bucket=answers["bucket"]),
                   f"{slug}: its own database role, broker user and S3 identity")
    privilege.record_verdicts(services_, grant.verdicts)
    s3_proxy = services.start_fault_proxy(services_.s3.url, folder)
    # Recorded at once (the caller saves it): `down` stops it even when this site fails to come up.
    services_.s3_proxies[slug] = s3_proxy
    install_log = folder / "logs" / "install.log"
    python = _timed(timings, "install_s", lambda: processes.install_site(site_dir, folder / "venv", install_log),
                    f"{slug}: install")
    # Its own sink: a site's mails land in its own mailbox, never next to another site's.
    sink = services.start_smtp_sink(folder, python)
    if sink is not None:
        services_.smtp_sinks[slug] = sink[0]
    env = processes.process_env(
        {
            # the site's own credentials, never the harness's: see harness/privilege.py
            "DATABASE_URL": grant.database_url,
            "BROKER_URL": grant.broker_url,
            "S3_ENDPOINT_URL": s3_proxy.url,
            "S3_ACCESS_KEY_ID": grant.s3_access_key_id,
            "S3_SECRET_ACCESS_KEY": grant.s3_secret_access_key,
            "S3_REGION": services_.s3.region,
            "SECRET_KEY": secrets.token_urlsafe(48),
            # /metrics exists (for the Prometheus of `chaos --services`) and answers only this token's bearer
            "METRICS_TOKEN": secrets.token_urlsafe(32),
            "APP_ORIGIN": answers["origin"],
            **({"SMTP_URL": sink[0].url} if sink is not None else {}),
        }
    )
    state.save_site_env(state_dir, slug, env)
    migrated = _timed(
        timings, "migrate_s", lambda: processes.run_site_command(python, slug, ["migrate"], env, str(site_dir)),
        f"{slug}: migrate"
    )
    if migrated.returncode != 0:
        raise StandError(f"{slug}: migrate failed: {migrated.stderr.strip()[-300:]}")
    upstream = f"http://127.0.0.1:{port}"
    https = answers["origin"].startswith("https://")
    record = SiteRecord(
        slug=slug,
        name=answers["site_name"],
        base_url=answers["origin"] if behind else upstream,
        upstream_url=upstream,
        origin=answers["origin"],
        # on an https origin the site names its cookie __Host-… (Secure, Path=/, no Domain)
        cookie_name=f"{'__Host-' if https else ''}{answers['auth_namespace']}_session",
        # the harness's own view of the site's database and broker space (administrator's credentials)
        database_url=services.with_database(services_.postgres.url, answers["database_name"]),
        broker_url=grant.admin_broker_url,
        broker_namespace=answers["broker_namespace"],
        task_queue=answers["task_queue"],
        dead_queue=answers["dead_queue"],
        s3_endpoint_url=s3_proxy.url,
        bucket=answers["bucket"],
        object_prefix=answers["object_prefix"],
        site_dir=str(site_dir),
        venv_python=python,
        ca_file=behind.ca_file if behind else "",
        mailbox=sink[1] if sink is not None else "",
    )
    if planned and planned.update:  # the old version runs and gets data, then is updated and migrated again
        _timed(timings, "migrate_s", lambda: rehearsal.rehearse(state_dir, planned, record, env),
               f"{slug}: upgrade rehearsal")
    return record, answers, timings


def role_command(record: SiteRecord, role: str) -> list[str]:
    port = record.upstream_url.rsplit(":", 1)[1]
    return {
        "web": ["serve", "--port", port, "--reuse-port"],
        "worker": ["worker", "--threads", str(WORKER_THREADS)],
    }[role]


READY_LINE = {"web": "Application startup complete", "worker": "worker consuming"}


class Started(msgspec.Struct, frozen=True):
    """A process just spawned: where its log was when it started, to see it say it is ready."""

    role: str
    index: int
    pid: int
    log_path: str
    offset: int


def spawn(state_dir: Path, record: SiteRecord, role: str, index: int) -> Started:
    """Start process ``index`` of ``role`` (log ``<role>-<index>``) without waiting for it; its pid is
    the caller's to record."""
    env = state.load_site_env(state_dir, record.slug)
    name = f"{role}-{index}"
    log_path = state.site_folder(state_dir, record.slug) / "logs" / f"{name}.log"
    offset = log_path.stat().st_size if log_path.exists() else 0
    pid = processes.start_site_process(
        record.venv_python, record.slug, role_command(record, role), env, record.site_dir, log_path
    )
    record.logs[name] = str(log_path)
    return Started(role=role, index=index, pid=pid, log_path=str(log_path), offset=offset)


def wait_started(record: SiteRecord, started: Started) -> None:
    """Until the process says it is ready (a web process: and the site answers /readyz)."""
    log_path = Path(started.log_path)
    processes.wait_logged(log_path, started.offset, READY_LINE[started.role], started.pid)
    if started.role == "web":
        processes.wait_ready(f"{record.upstream_url}/readyz", started.pid, log_path)


def start_roles(state_dir: Path, record: SiteRecord, roles: tuple[str, ...] = ROLES,
                counts: state.ProcessCounts | None = None) -> None:
    """Start the site's processes (pids recorded on ``record``) and wait until each says it is ready."""
    counts = counts or state.ProcessCounts()
    for role in roles:
        for index in range(getattr(counts, role)):
            started = spawn(state_dir, record, role, index)
            getattr(record.pids, role).append(started.pid)
            wait_started(record, started)


def stop_roles(record: SiteRecord, roles: tuple[str, ...] = ROLES, kill: bool = False) -> None:
    stop = processes.kill_site_process if kill else processes.stop_site_process
    for role in roles:
        pids = getattr(record.pids, role)
        for pid in pids:
            stop(pid, record.venv_python)
        pids.clear()


def up(state_dir: Path, count: int, overrides: dict | None = None,
       counts: state.ProcessCounts | None = None, behind_proxy: bool = False,
       fleet: list[Planned] | None = None) -> SitesFile:
    """Stand ``count`` sites up; with ``behind_proxy`` each is served through nginx over https
    (harness/proxy.py) and started with the proxy as its only trusted one. With ``fleet`` the
    sites are those (harness/fleet_plan.py) instead of fresh renders."""
    count = len(fleet) if fleet else count
    state_dir = Path(state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    if state.sites_path(state_dir).exists():
        raise StandError(f"{state_dir} already holds a run; `down` it first or pick another --state")
    run_id = secrets.token_hex(3)
    # Planned before anything starts: the sites are rendered with their public origins.
    public = proxy.public_addresses(count) if behind_proxy else [None] * count
    behind = (proxy.make_certificates(state_dir / "proxy", sorted({host for host, _ in public}))
              if behind_proxy else None)
    with progress.step("services (the embedded ones started, external ones reached)"):
        provisioned = services.provision(state_dir)
    sites = SitesFile(sites=[], services=provisioned, run_id=run_id, processes=counts or state.ProcessCounts(),
                      proxy=behind)
    state.save(state_dir, sites)  # from here on, `down` can clean up whatever follows
    info = RunInfo(run_id=run_id, answers={}, timings={})
    with ThreadPoolExecutor(max_workers=min(count, 4)) as pool:
        futures = [pool.submit(_prepare_site, state_dir, provisioned, i, run_id, overrides, behind, public[i],
                               fleet[i] if fleet else None)
                   for i in range(count)]
        outcomes = [future.exception() or future.result() for future in futures]
    prepared = [o for o in outcomes if not isinstance(o, BaseException)]
    for record, answers, timings in prepared:
        sites.sites.append(record)
        info.answers[record.slug] = answers
        if fleet:  # the user's answers, as given; what the run changed is in the plan's overrides
            info.fleet[record.slug] = planned = next(site for site in fleet if site.slug == record.slug)
            info.answers[record.slug] = planned.answers
        info.timings[record.slug] = timings
    state.save(state_dir, sites)  # what was made is recorded, so `down` removes it
    if failed := [o for o in outcomes if isinstance(o, BaseException)]:
        raise failed[0]
    for record, _, timings in prepared:
        _timed(timings, "start_s", lambda record=record: start_roles(state_dir, record, counts=sites.processes),
               f"{record.slug}: start web and worker")
        state.save(state_dir, sites)
    if behind:
        start_proxy(state_dir, sites, public)
    (state_dir / "run.json").write_bytes(msgspec.json.format(msgspec.json.encode(info), indent=2))
    return sites


def start_proxy(state_dir: Path, sites: SitesFile, public: list[tuple[str, int]]) -> None:
    """nginx in front of the running sites; returns once every site answers through it."""
    behind = sites.proxy
    behind.routes = proxy.routes_for(sites.sites, public)
    files = [tomllib.loads((Path(s.site_dir) / "site.toml").read_text())["files"] for s in sites.sites]
    process = proxy.spawn(state_dir / "proxy", behind, max(f["max_file_bytes"] for f in files),
                          max(f.get("receive_seconds", proxy.RECEIVE_SECONDS) for f in files))
    behind.pid = process.pid
    state.save(state_dir, sites)  # the pid first: `down` stops it whatever happens next
    proxy.wait_ready(behind, process)


def load_run_info(state_dir: Path) -> RunInfo | None:
    path = Path(state_dir) / "run.json"
    return msgspec.json.decode(path.read_bytes(), type=RunInfo) if path.exists() else None


def down(state_dir: Path) -> list[str]:
    """Stop every process this run started, drop its databases, buckets and broker keys.

    Returns the problems met (empty when everything is gone). Logs and reports stay.
    """
    state_dir = Path(state_dir).resolve()
    sites = state.load(state_dir)
    problems: list[str] = []
    if sites.proxy is not None:  # the front door closes first
        proxy.stop(sites.proxy)
    for record in sites.sites:
        stop_roles(record, tuple(r for r in ("web", "worker") if getattr(record.pids, r)))
    for record in sites.sites:
        problems += [f"{record.slug}: {p}" for p in services.drop_site_resources(sites.services, record)]
        problems += [f"{record.slug}: {p}" for p in privilege.revoke_site(
            sites.services, database=urlsplit(record.database_url).path.lstrip("/"),
            namespace=record.broker_namespace)]
    services.stop_services(sites.services)
    for record in (sites.services.postgres, sites.services.broker, sites.services.s3):
        if record.pid is not None and record.data_dir:
            shutil.rmtree(record.data_dir, ignore_errors=True)
    for record in sites.sites:
        shutil.rmtree(Path(record.venv_python).parent.parent, ignore_errors=True)
    state.sites_path(state_dir).rename(state_dir / "sites.down.json")
    return problems
